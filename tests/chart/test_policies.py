"""The policies ConfigMap: the repository's policies/, values that add or replace files, Audit-only."""

import yaml

from tests.chart.support import CHART, TEAM_QUOTA, VARIANTS, render
from tests.support import REPO
from webhook.app import build_registry
from webhook.cel import CelCompiler
from webhook.deploy.chart_files import drift
from webhook.platform import platform_kinds
from webhook.policy.loader import PolicyLoader



def config_data(values=None):
    return render(values).one("ConfigMap")["data"]


def load(data, tmp_path):
    """Load the ConfigMap's files as the webhook loads its mounted policies directory."""
    for name, text in data.items():
        (tmp_path / name).write_text(text)
    return PolicyLoader(build_registry(), CelCompiler()).load(tmp_path)


def test_chart_copy_of_the_policies_is_current():
    """files/policies is a copy of policies/ (Helm reads only chart files): this fails when they drift."""
    problems = [d for d in drift(platform_kinds()) if str(d.path).startswith("files/policies")]
    assert problems == [], f"run `python -m webhook.deploy.chart_files`: {problems}"


def test_default_configmap_is_the_policies_directory(tmp_path):
    data = config_data()
    repo = {p.name: p.read_text() for p in (REPO / "policies").iterdir() if p.suffix in (".yaml", ".yml")}
    assert repo, "the repository ships default policies"
    assert data == repo  # byte for byte: comments and formatting survive
    result = load(data, tmp_path)
    assert result.ok, [str(e) for e in result.errors]
    assert len(result.policies) >= len(repo)
    assert sum(len(v.encode()) for v in data.values()) < 1024 * 1024  # a ConfigMap holds at most 1 MiB


def test_extra_policies_variant_loads(tmp_path):
    data = config_data(VARIANTS["extra-policies"])
    result = load(data, tmp_path)
    assert result.ok, [str(e) for e in result.errors]
    assert "team-quota" in {p.name for p in result.policies}


def test_extra_policies_add_and_replace(tmp_path):
    some_default = sorted(config_data())[0]
    replacement = TEAM_QUOTA.replace("team-quota", "replaced")
    data = config_data({"policies": {"extra": {"team-quota.yaml": TEAM_QUOTA, some_default: replacement}}})
    assert data["team-quota.yaml"] == TEAM_QUOTA
    assert data[some_default] == replacement
    result = load(data, tmp_path)
    assert result.ok, [str(e) for e in result.errors]
    assert {"team-quota", "replaced"} <= {p.name for p in result.policies}


def test_defaults_can_be_excluded_or_dropped():
    names = sorted(config_data())
    assert names[0] not in config_data({"policies": {"exclude": [names[0]]}})
    assert set(config_data({"policies": {"exclude": [names[0]]}})) == set(names[1:])
    assert config_data({"policies": {"defaults": False, "extra": {"only.yaml": TEAM_QUOTA}}}) == {"only.yaml": TEAM_QUOTA}


def test_audit_only_is_a_flag_and_the_files_stay_as_in_git():
    """auditOnly never rewrites the policy files (error lines keep matching git): serve --force-audit does it."""
    values = {"auditOnly": True, "policies": {"extra": {"team-quota.yaml": TEAM_QUOTA}}}
    assert config_data(values) == config_data({"policies": {"extra": {"team-quota.yaml": TEAM_QUOTA}}})
    (container,) = render(values).one("Deployment")["spec"]["template"]["spec"]["containers"]
    assert "--force-audit" in container["args"]
    (default,) = render().one("Deployment")["spec"]["template"]["spec"]["containers"]
    assert "--force-audit" not in default["args"]


def test_existing_configmap_is_mounted_and_none_is_made():
    rendered = render(VARIANTS["existing-configmap"])
    assert not [c for c in rendered.of_kind("ConfigMap") if c["metadata"]["name"].endswith("-policies")]
    volumes = {v["name"]: v for v in rendered.one("Deployment")["spec"]["template"]["spec"]["volumes"]}
    assert volumes["policies"]["configMap"]["name"] == "platform-policies-from-git"
    assert "ConfigMap platform-policies-from-git (not managed by this chart)" in rendered.notes


def test_without_audit_only_policies_keep_their_mode():
    for text in config_data().values():
        for doc in yaml.safe_load_all(text):
            if doc and doc["apiVersion"].startswith("quartermaster.dev/"):
                assert doc["spec"].get("mode", "Enforce") == "Enforce"


def test_chart_has_no_policy_subdirectories():
    assert all(p.is_file() for p in (CHART / "files" / "policies").iterdir())
