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


def site_lines(text):
    """A policy file's lines, those the chart fills in (marked `# chart: ...`) left out."""
    return [line for line in text.splitlines() if "# chart:" not in line and "; chart:" not in line]


def test_default_configmap_is_the_policies_directory(tmp_path):
    data = config_data()
    repo = {p.name: p.read_text() for p in (REPO / "policies").iterdir() if p.suffix in (".yaml", ".yml")}
    assert repo, "the repository ships default policies"
    # byte for byte, comments and formatting included, but the site's values: every line stays where it was
    assert {name: site_lines(text) for name, text in data.items()} == {name: site_lines(text) for name, text in repo.items()}
    assert {name: len(text.splitlines()) for name, text in data.items()} == \
        {name: len(text.splitlines()) for name, text in repo.items()}
    assert {name: text for name, text in data.items() if name != "notebook-injection.yaml"} == \
        {name: text for name, text in repo.items() if name != "notebook-injection.yaml"}
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


def notebook_policy(values):
    return yaml.safe_load(config_data(values)["notebook-injection.yaml"])["spec"]


def test_the_notebook_policy_takes_the_sites_values_and_the_charts_image(tmp_path):
    values = {"image": {"repository": "registry.example.org/platform/quartermaster", "tag": "2.0.1"},
              "notebook": {"issuer": "https://sso.example.org/realms/ml", "credentialsSecretName": "oidc-creds-{user}",
                           "homeClaimName": "eos-home"}}
    spec = notebook_policy(values)
    refresher = spec["tokenRefresher"]
    assert refresher["image"] == "registry.example.org/platform/quartermaster:2.0.1"
    assert "--issuer=https://sso.example.org/realms/ml" in refresher["args"]
    assert refresher["credentials"]["secretName"] == "oidc-creds-{user}"
    assert spec["home"]["volume"]["persistentVolumeClaim"]["claimName"] == "eos-home"
    digest = "sha256:" + "ab" * 32
    pinned = notebook_policy({**values, "image": {"repository": "registry.example.org/qm", "digest": digest}})
    assert pinned["tokenRefresher"]["image"] == f"registry.example.org/qm@{digest}"
    data = config_data(values)
    result = load(data, tmp_path)
    assert result.ok, [str(e) for e in result.errors]


def test_the_chart_refuses_to_render_without_the_sites_issuer():
    import pytest
    with pytest.raises(Exception, match="notebook.issuer: set your identity provider's OIDC issuer"):
        render({"notebook": {"issuer": ""}})
    with pytest.raises(Exception, match="is not an https:// URL"):
        render({"notebook": {"issuer": "http://insecure.example.org"}})
    with pytest.raises(Exception, match="is not a plain value"):
        render({"notebook": {"homeClaimName": "eos # injected"}})
    # without the notebook policy, nothing to adapt
    data = render({"notebook": {"issuer": ""}, "policies": {"exclude": ["notebook-injection.yaml"]}}).one("ConfigMap")["data"]
    assert "notebook-injection.yaml" not in data
