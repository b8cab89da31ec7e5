"""`serve` with Kyverno's pod-security ClusterPolicies: Enforce denies a privileged Pod and, through autogen, its
Deployment; Audit admits with a warning and reports the failure under the rule names Kyverno uses."""

import re
from pathlib import Path

import pytest

from tests.families.kyverno.test_conformance import CORPUS
from tests.kube.policyreport_schema import assert_valid_report
from tests.support import review, running_server
from webhook.reports.policyreport import reports_from_entries
from webhook.reports.sink import MemoryResultSink

POD_SECURITY = CORPUS.parent / "kyverno-policies" / "pod-security"
pytestmark = pytest.mark.skipif(not POD_SECURITY.is_dir(), reason="Kyverno's pod-security policies not found")


def policies(tmp_path: Path, action: str) -> Path:
    """The classic baseline and restricted policies (the pattern-based ones), with the given action."""
    target = tmp_path / f"policies-{action}"
    target.mkdir()
    for level in ("baseline", "restricted"):
        for source in sorted((POD_SECURITY / level).glob("*/*.yaml")):
            text = re.sub(r"validationFailureAction: \w+", f"validationFailureAction: {action}", source.read_text())
            (target / f"{level}-{source.name}").write_text(text)
    assert len(list(target.iterdir())) >= 17
    return target


def privileged_pod(name="priv"):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.25", "securityContext": {"privileged": True}}]}}


def privileged_deployment():
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": privileged_pod()["spec"]}}}


async def test_enforce_denies_privileged_pod_and_deployment(tmp_path):
    async with running_server(policies(tmp_path, "Enforce"), tmp_path) as server:
        pod = await server.admit("/validate", review(privileged_pod()))
        assert not pod["allowed"] and pod["status"]["code"] == 403
        assert "disallow-privileged-containers" in pod["status"]["message"]
        deployment = await server.admit("/validate", review(privileged_deployment()))
        assert not deployment["allowed"] and "autogen-privileged-containers" in deployment["status"]["message"]


async def test_audit_warns_and_reports_kyverno_rule_names(tmp_path):
    async with running_server(policies(tmp_path, "Audit"), tmp_path, sink=MemoryResultSink()) as server:
        pod = await server.admit("/validate", review(privileged_pod()))
        assert pod["allowed"] and any("Privileged mode is disallowed" in w for w in pod["warnings"])
        deployment = await server.admit("/validate", review(privileged_deployment()))
        assert deployment["allowed"] and deployment["warnings"]
        reports = reports_from_entries(list(server.qm.sink.entries))
        for report in reports:
            assert_valid_report(report)
        failing = {(r["policy"], r["rule"], report["scope"]["kind"]) for report in reports
                   for r in report["results"] if r["result"] == "fail"}
        assert ("disallow-privileged-containers", "privileged-containers", "Pod") in failing
        assert ("disallow-privileged-containers", "autogen-privileged-containers", "Deployment") in failing
