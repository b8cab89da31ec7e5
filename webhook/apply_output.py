"""What `quartermaster apply` prints: the admitted resources (YAML or JSON), or a cluster report
(`--policy-report`, as `kyverno apply --policy-report` prints one; a ClusterPolicyReport, or with
`--report-format openreports` a ClusterReport), and the table on standard error.

Kept apart from webhook/apply.py (which runs admission) so that the formats can change without
touching the engine path.
"""

from __future__ import annotations

import json
import time
from typing import Any, Mapping, TextIO

import yaml

from webhook.apply import ApplyReport, Skip
from webhook.model.results import Outcome, RuleResult
from webhook.model.shapes import plain
from webhook.reports.policyreport import MANAGED_BY, OUTCOMES, SOURCE, report_header, result_entry, summary
from webhook.reports.report_format import DEFAULT_REPORT_FORMAT, ReportFormat
from webhook.reports.sink import ReportEntry, ResourceRef
from webhook.model.wording import counted

OUTPUTS = ("yaml", "json")


def write_documents(report: ApplyReport, out: TextIO, fmt: str = "yaml") -> None:
    """Each admitted resource as mutated, then every object the policies would create."""
    docs = [plain(d) for d in list(report.admitted) + list(report.created.values())]
    if fmt == "json":
        out.write(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}, indent=2) + "\n")
    elif docs:
        out.write(yaml.safe_dump_all(docs, sort_keys=False, default_flow_style=False))


def _name(result: RuleResult) -> str:
    return result.policy.qualified_name


def _reference(resource: Mapping[str, Any], namespace: str) -> dict[str, str]:
    meta = resource.get("metadata") or {}
    ref = {"apiVersion": str(resource.get("apiVersion", "")), "kind": str(resource.get("kind", "")),
           "name": str(meta.get("name") or meta.get("generateName") or "")}
    if namespace:
        ref["namespace"] = namespace
    return ref


def policy_report(report: ApplyReport, now: float | None = None,
                  fmt: ReportFormat = DEFAULT_REPORT_FORMAT) -> dict[str, Any]:
    """One cluster report named "merged" with every result, each naming its resource (Kyverno's shape)."""
    seconds = int(now if now is not None else time.time())
    results = []
    for label, result in report.rows:
        resource, namespace = report.resources[label]
        reference = _reference(resource, namespace)
        ref = ResourceRef(reference["apiVersion"], reference["kind"], namespace, reference["name"], "")
        results.append({**result_entry(ReportEntry(ref, result, float(seconds))), "resources": [reference]})
    for skip in report.skips:
        resource, namespace = report.resources[skip.label]
        results.append({"source": SOURCE, "policy": "-", "rule": "namespace", "result": "skip", "scored": False,
                        "timestamp": {"seconds": seconds, "nanos": 0}, "message": skip.reason,
                        "resources": [_reference(resource, namespace)]})
    return {**report_header(fmt, fmt.cluster_kind, {"name": "merged", "labels": dict(MANAGED_BY)}),
            "summary": summary(results), "results": results}


def write_policy_report(report: ApplyReport, out: TextIO, fmt: str = "yaml",
                        report_fmt: ReportFormat = DEFAULT_REPORT_FORMAT) -> None:
    doc = policy_report(report, fmt=report_fmt)
    out.write(json.dumps(doc, indent=2) + "\n" if fmt == "json" else yaml.safe_dump(doc, sort_keys=False))


def _result_text(r: RuleResult) -> str:
    return r.outcome.value + ("" if r.outcome is Outcome.PASS or r.blocks else " (audit)")


def write_table(report: ApplyReport, out: TextIO, detailed: bool = False) -> None:
    """Failures, warnings, errors and skips; every pass too with `detailed`; then one summary line."""
    rows = [("RESOURCE", "POLICY", "RULE", "RESULT", "MESSAGE")]
    rows += [(label, _name(r), r.rule, _result_text(r), " ".join(r.message.split()))
             for label, r in report.rows if detailed or r.outcome is not Outcome.PASS]
    rows += [(skip.label, "-", "namespace", "skip", skip.reason) for skip in report.skips]
    if len(rows) > 1:
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        for row in rows:
            out.write("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4] + "\n")
    for label, message in report.denials:
        out.write(f"DENIED {label}: {message}\n")
    counts = {o: sum(1 for _, r in report.rows if r.outcome.value == o) for o in OUTCOMES}
    counts["skip"] += len(report.skips)
    out.write(f"{len(report.admitted)} admitted, {len(report.denials)} denied, "
              f"{counted(len(report.created), 'object')} to create; "
              + ", ".join(f"{counts[o]} {o}" for o in OUTCOMES) + "\n")


def audited_failures(report: ApplyReport) -> list[tuple[str, RuleResult]]:
    """Failures that were admitted with a warning (Audit): `--audit-warn` makes them fail the run."""
    return [(label, r) for label, r in report.rows if r.reported and r.outcome in (Outcome.FAIL, Outcome.ERROR)]


__all__ = ["OUTPUTS", "Skip", "audited_failures", "policy_report", "write_documents", "write_policy_report", "write_table"]
