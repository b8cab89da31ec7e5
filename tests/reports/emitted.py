"""Reports as Quartermaster emits them, for the checks of what a CRD (offline) or the API server (on the real
control plane) makes of them."""

from __future__ import annotations

from typing import Any

from tests.support import pid
from webhook.model.results import Action, failed, passed
from webhook.reports.policyreport import PolicyMeta, build_report, result_entry
from webhook.reports.report_format import ReportFormat
from webhook.reports.sink import ReportEntry, ResourceRef


def emitted_reports(fmt: ReportFormat, namespace: str = "alice") -> list[dict[str, Any]]:
    """What the writer stores (a Pod's report, a Namespace's) and what `apply --policy-report` prints."""
    out = []
    for ref in (ResourceRef("v1", "Pod", namespace, "train", "uid-1"),
                ResourceRef("v1", "Namespace", "", namespace, "uid-2")):
        results = [result_entry(ReportEntry(ref, failed(pid("profile-quota"), "gpus", "over quota", Action.AUDIT),
                                            1_700_000_000.25), PolicyMeta(severity="high", category="GPU")),
                   result_entry(ReportEntry(ref, passed(pid("profile-quota"), "storage"), 1_700_000_000.0))]
        out.append(build_report(ref, results, fmt=fmt))
    return out
