"""The platform policy CRDs: generated from the kinds' JSON schemas, shipped by the chart unchanged,
accepting every policy the webhook accepts and refusing what both would refuse."""

import copy

import pytest
import yaml

from tests.chart.apiserver_schema import crd_errors
from tests.chart.support import CHART, render
from tests.kube.policyreport_schema import assert_valid_report
from tests.reports.emitted import emitted_reports
from tests.support import REPO, assert_valid_k8s, load_yaml
from webhook.app import build_registry
from webhook.cel import CelCompiler
from webhook.deploy.chart_files import drift
from webhook.deploy.crds import generate_crds, plural_of
from webhook.platform import platform_kinds
from webhook.policy.loader import PolicyLoader
from webhook.reports.report_format import REPORT_FORMATS


@pytest.fixture(scope="module")
def generated():
    return {crd.name: crd for crd in generate_crds(platform_kinds())}


def rendered_crds(values=None):
    return {c["metadata"]["name"]: c for c in render(values).of_kind("CustomResourceDefinition")
            if c["spec"]["group"] == "quartermaster.dev"}


def test_every_platform_kind_has_a_crd(generated):
    kinds = platform_kinds()
    assert kinds, "platform_kinds() registers the batteries"
    by_kind = {crd.kind.kind: crd for crd in generated.values()}
    for kind in kinds:
        crd = by_kind[kind.kind].manifest
        group, version = kind.api_version.split("/")
        assert crd["spec"]["group"] == group and crd["spec"]["versions"][0]["name"] == version
        assert crd["spec"]["names"]["plural"] == plural_of(kind.kind)
    assert set(rendered_crds()) == set(generated)


def test_chart_crds_are_the_generated_ones(generated):
    problems = [d for d in drift(platform_kinds()) if str(d.path).startswith("files/crds")]
    assert problems == [], f"run `python -m webhook.deploy.chart_files`: {problems}"
    for name, crd in rendered_crds().items():
        assert crd["spec"] == generated[name].manifest["spec"]
        assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
        assert crd["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"
        assert_valid_k8s(crd)


def test_crds_are_optional_and_can_be_removed_with_the_release():
    assert rendered_crds({"crds": {"install": False}}) == {}
    assert all("annotations" not in c["metadata"] for c in rendered_crds({"crds": {"keep": False}}).values())


def policy_documents():
    # the default policies, and the opt-in ones shipped as examples (QueueAssignment)
    paths = sorted((REPO / "policies").glob("*.yaml")) + [REPO / "examples" / "queue-assignment.yaml"]
    return [doc for path in paths for doc in load_yaml(path) if doc.get("apiVersion", "").startswith("quartermaster.dev/")]


def crd_of(generated, doc):
    return next(c.manifest for c in generated.values() if c.kind.kind == doc["kind"])


def loader_errors(doc, tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(doc))
    return PolicyLoader(build_registry(), CelCompiler()).load(path).errors


def test_shipped_policies_are_accepted_by_the_api_server(generated):
    docs = policy_documents()
    assert {d["kind"] for d in docs} == {k.kind for k in platform_kinds()}
    for doc in docs:
        assert crd_errors(crd_of(generated, doc), doc) == [], doc["metadata"]["name"]


BREAKAGES = {
    "unknown spec field": lambda spec: spec.update(enforcement="strict"),
    "mode outside its enum": lambda spec: spec.update(mode="Sometimes"),
    "failurePolicy outside its enum": lambda spec: spec.update(failurePolicy="Retry"),
    "selector with a bad operator": lambda spec: spec.update(
        namespaceSelector={"matchExpressions": [{"key": "a", "operator": "Near"}]}),
    "matchConditions without expression": lambda spec: spec.update(matchConditions=[{"name": "x"}]),
}


@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_bad_policies_fail_early_and_at_the_webhook(generated, breakage, tmp_path):
    for doc in policy_documents():
        bad = copy.deepcopy(doc)
        BREAKAGES[breakage](bad["spec"])
        assert crd_errors(crd_of(generated, bad), bad), f"{doc['kind']}: the API server would accept {breakage}"
        assert loader_errors(bad, tmp_path), f"{doc['kind']}: the webhook would accept {breakage}"


def test_crd_is_never_stricter_than_the_webhook(generated, tmp_path):
    """Values the JSON schema allows but OpenAPI cannot type (numbers or strings) are accepted by the CRD."""
    quota = next(d for d in policy_documents() if d["kind"] == "ProfileQuota")
    doc = copy.deepcopy(quota)
    doc["spec"]["gpus"]["legacyResources"] = [{"prefix": "nvidia.com/mig-", "weight": 0.125}]
    assert not loader_errors(doc, tmp_path)
    assert crd_errors(crd_of(generated, doc), doc) == []


def test_loosened_checks_are_listed_in_the_files(generated):
    for crd in generated.values():
        text = (CHART / "files" / "crds" / f"{crd.name}.yaml").read_text()
        for line in crd.loosened:
            assert f"# loosened: {line}" in text


def test_policy_report_crds():
    crds = {c["metadata"]["name"]: c for c in render({"policyReports": {"installCRDs": True}}).of_kind("CustomResourceDefinition")}
    report = crds["policyreports.wgpolicyk8s.io"]
    assert report["spec"]["scope"] == "Namespaced"
    assert crds["clusterpolicyreports.wgpolicyk8s.io"]["spec"]["scope"] == "Cluster"
    sample = {"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport", "metadata": {"name": "r"},
              "scope": {"apiVersion": "v1", "kind": "Pod", "name": "p", "namespace": "alice"},
              "summary": {"pass": 1, "fail": 1, "warn": 0, "error": 0, "skip": 0},
              "results": [{"source": "quartermaster", "policy": "profile-quota", "rule": "gpus", "result": "fail",
                           "message": "over quota", "timestamp": {"seconds": 1, "nanos": 0}}]}
    assert crd_errors(report, sample) == []
    sample["results"][0]["result"] = "maybe"
    assert crd_errors(report, sample)
    assert "policyreports.wgpolicyk8s.io" not in {c["metadata"]["name"] for c in render().of_kind("CustomResourceDefinition")}


@pytest.mark.parametrize("name", ["wgpolicyk8s", "openreports"])
def test_report_crds_of_the_chosen_format_accept_what_quartermaster_writes(name):
    """policyReports.format picks the CRDs installCRDs renders: the two kinds of that API only, with the names,
    scopes and version the writer uses (webhook/reports/report_format.py); every report it emits is stored."""
    fmt = REPORT_FORMATS[name]
    rendered = render({"policyReports": {"format": name, "installCRDs": True}}).of_kind("CustomResourceDefinition")
    crds = {c["spec"]["names"]["kind"]: c for c in rendered if c["spec"]["group"] != "quartermaster.dev"}
    assert set(crds) == {fmt.kind, fmt.cluster_kind}
    for kind, plural, scope in ((fmt.kind, fmt.plural, "Namespaced"), (fmt.cluster_kind, fmt.cluster_plural, "Cluster")):
        crd = crds[kind]
        assert crd["metadata"]["name"] == f"{plural}.{fmt.group}" and crd["spec"]["scope"] == scope
        assert [v["name"] for v in crd["spec"]["versions"]] == [fmt.version]
    for report in emitted_reports(fmt):
        assert_valid_report(report)
        assert crd_errors(crds[report["kind"]], report) == [], report["kind"]
        assert ("source" in report) is fmt.report_source
        assert all(r["source"] == "quartermaster" for r in report["results"])


def test_openreports_crds_take_the_report_level_fields_of_the_api():
    """openreports.io/v1alpha1 (openreports/reports-api): a report's own `source` and `configuration.limits`,
    results as in wgpolicyk8s.io; the wgpolicyk8s.io CRD has neither report-level field."""
    crds = {c["spec"]["names"]["kind"]: c for c in render(
        {"policyReports": {"format": "openreports", "installCRDs": True}}).of_kind("CustomResourceDefinition")}
    report = {"apiVersion": "openreports.io/v1alpha1", "kind": "Report", "metadata": {"name": "r"},
              "source": "quartermaster", "configuration": {"limits": {"maxResults": 10, "statusFilter": ["fail"]}},
              "scope": {"apiVersion": "v1", "kind": "Pod", "name": "p", "namespace": "alice"},
              "summary": {"pass": 0, "fail": 1, "warn": 0, "error": 0, "skip": 0},
              "results": [{"source": "quartermaster", "policy": "profile-quota", "rule": "gpus", "result": "fail",
                           "resources": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "namespace": "alice"}],
                           "timestamp": {"seconds": 1, "nanos": 0}}]}
    assert crd_errors(crds["Report"], report) == []
    for breakage in ({"configuration": {"limits": {"statusFilter": ["maybe"]}}}, {"configuration": {}},
                     {"owner": "me"}):
        assert crd_errors(crds["Report"], {**report, **breakage}), breakage
    wg = {c["spec"]["names"]["kind"]: c for c in render({"policyReports": {"installCRDs": True}}).of_kind(
        "CustomResourceDefinition")}["PolicyReport"]
    assert crd_errors(wg, {**report, "apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport"}) == [
        ".source: unknown field", ".configuration: unknown field"]
