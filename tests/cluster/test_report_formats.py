"""Both report formats through the real API server: the CRDs the chart installs for `policyReports.format`
(wgpolicyk8s.io PolicyReport/ClusterPolicyReport, openreports.io Report/ClusterReport) are established, and every
report Quartermaster emits is stored as it was written: nothing refused, nothing pruned."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chart.support import render
from tests.cluster.kube import Kube
from tests.cluster.quartermaster import Installation, apply_crds
from tests.cluster.workloads import unique
from tests.reports.emitted import emitted_reports
from webhook.policy.object_check import AUTHORED_METADATA
from webhook.reports.report_format import REPORT_FORMATS

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("cluster")]


def authored(obj: dict[str, Any]) -> dict[str, Any]:
    """The object without what the API server adds to metadata (uid, resourceVersion, managedFields...)."""
    meta = obj.get("metadata") or {}
    kept = {k: meta[k] for k in AUTHORED_METADATA if meta.get(k)}
    return {**{k: v for k, v in obj.items() if k != "metadata"}, "metadata": kept}


@pytest.mark.parametrize("name", sorted(REPORT_FORMATS))
def test_the_api_server_stores_every_report_as_written(admin: Kube, quartermaster: Installation, name: str) -> None:
    fmt = REPORT_FORMATS[name]
    crds = [c for c in render({"policyReports": {"format": name, "installCRDs": True}}).of_kind(
        "CustomResourceDefinition") if c["spec"]["group"] == fmt.group]
    assert {c["spec"]["names"]["kind"] for c in crds} == {fmt.kind, fmt.cluster_kind}
    apply_crds(admin, crds)
    namespace = unique(f"reports-{name}")
    admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    reports = emitted_reports(fmt, namespace)
    assert {r["kind"] for r in reports} == {fmt.kind, fmt.cluster_kind}
    try:
        for report in reports:
            stored = admin.create(report)
            assert authored(stored) == authored(report), report["kind"]
    finally:
        for report in reports:
            meta = report["metadata"]
            admin.delete(report["apiVersion"], report["kind"], meta["name"], meta.get("namespace"))
        admin.delete("v1", "Namespace", namespace)
