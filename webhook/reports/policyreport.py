"""Policy report objects from rule results: pure functions, no API calls.

Written as wgpolicyk8s.io/v1alpha2 PolicyReports (the default) or openreports.io/v1alpha1 Reports: the
two differ only in what webhook.reports.report_format tabulates (apiVersion, kinds, a report-level
`source`); every builder here takes the format.

One report per resource (docs/live.md argues why): named after the resource, owned by it (so the
garbage collector removes it with the resource), with a `scope` naming it. Results are keyed by
(policy, rule): a newer result replaces an older one, results of policies that are gone are pruned.
Cluster-scoped resources (Namespaces, Profiles) get a ClusterPolicyReport.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Iterable, Mapping

from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Outcome, PolicyId, RuleResult
from webhook.reports.report_format import DEFAULT_REPORT_FORMAT, ReportFormat
from webhook.reports.sink import ReportEntry, ResourceRef

SOURCE = "quartermaster"
MANAGED_BY = {"app.kubernetes.io/managed-by": "quartermaster"}
OUTCOMES = tuple(o.value for o in Outcome)  # pass, fail, warn, error, skip: the summary's keys
EVENTS_ANNOTATION = "quartermaster.dev/events"  # none (default) | fail | all
SEVERITY_ANNOTATION = "policies.kyverno.io/severity"
CATEGORY_ANNOTATION = "policies.kyverno.io/category"
SEVERITIES = frozenset({"critical", "high", "medium", "low", "info"})
EVENT_MODES = frozenset({"none", "fail", "all"})
MESSAGE_LIMIT = 1024
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


@frozen_dataclass
class PolicyMeta:
    """What a policy's annotations ask of reporting."""

    events: str = "none"
    severity: str = ""
    category: str = ""

    @classmethod
    def of(cls, annotations: Mapping[str, str] | None) -> "PolicyMeta":
        annotations = annotations or {}
        events = str(annotations.get(EVENTS_ANNOTATION, "none")).strip().lower()
        severity = str(annotations.get(SEVERITY_ANNOTATION, "")).strip().lower()
        return cls(events if events in EVENT_MODES else "none", severity if severity in SEVERITIES else "",
                   str(annotations.get(CATEGORY_ANNOTATION, "")).strip())

    def wants_event(self, outcome: Outcome) -> bool:
        if self.events == "all":
            return True
        return self.events == "fail" and outcome in (Outcome.FAIL, Outcome.ERROR, Outcome.WARN)


def report_kind(resource: ResourceRef, fmt: ReportFormat = DEFAULT_REPORT_FORMAT) -> str:
    return fmt.kind_for(bool(resource.namespace))


def report_name(resource: ResourceRef) -> str:
    """`<kind>-<name>`, stable across replicas and scans; hashed when that is no valid object name."""
    name = f"{resource.kind.lower()}-{resource.name}"
    if len(name) <= 253 and _NAME.match(name):
        return name
    digest = hashlib.sha256(f"{resource.api_version}/{resource.kind}/{resource.name}".encode()).hexdigest()[:20]
    return f"{resource.kind.lower()[:40]}-{digest}"


def result_entry(entry: ReportEntry, meta: PolicyMeta = PolicyMeta()) -> dict[str, Any]:
    r: RuleResult = entry.result
    seconds = int(entry.timestamp)
    out: dict[str, Any] = {
        "source": SOURCE,
        "policy": r.policy.qualified_name,
        "rule": r.rule,
        "result": r.outcome.value,
        "scored": True,
        "timestamp": {"seconds": seconds, "nanos": int((entry.timestamp - seconds) * 1e9)},
        # `policy` is the name users know; the kind tells apart policies of two kinds with one name
        "properties": {**dict(r.properties), "mode": r.action.value, "policyKind": r.policy.kind},
    }
    if r.message:
        out["message"] = r.message[:MESSAGE_LIMIT]
    if meta.severity:
        out["severity"] = meta.severity
    if meta.category:
        out["category"] = meta.category
    return out


def merge_results(existing: Iterable[Mapping[str, Any]], new: Iterable[Mapping[str, Any]],
                  known_policies: frozenset[str] | None = None) -> list[dict[str, Any]]:
    """Newer (policy, rule) results replace older ones; results of unknown policies are dropped."""
    merged: dict[tuple[str, str, str], dict[str, Any]] = {}
    for result in list(existing) + list(new):
        if known_policies is not None and result.get("policy") not in known_policies:
            continue
        kind = str((result.get("properties") or {}).get("policyKind", ""))
        merged[(str(result.get("policy", "")), kind, str(result.get("rule", "")))] = dict(result)
    return [merged[key] for key in sorted(merged)]


def summary(results: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    counts = {outcome: 0 for outcome in OUTCOMES}
    for result in results:
        if result.get("result") in counts:
            counts[result["result"]] += 1
    return counts


def same_results(a: Iterable[Mapping[str, Any]], b: Iterable[Mapping[str, Any]]) -> bool:
    """Equal but for timestamps: a scan that finds nothing new need not write."""
    def strip(results: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if k != "timestamp"} for r in results]
    return strip(a) == strip(b)


def scope_of(resource: ResourceRef) -> dict[str, Any]:
    scope = {"apiVersion": resource.api_version, "kind": resource.kind, "name": resource.name}
    if resource.namespace:
        scope["namespace"] = resource.namespace
    if resource.uid:
        scope["uid"] = resource.uid
    return scope


def report_header(fmt: ReportFormat, kind: str, metadata: dict[str, Any]) -> dict[str, Any]:
    """apiVersion, kind, metadata, and the report's own `source` where the format has one."""
    header: dict[str, Any] = {"apiVersion": fmt.api_version, "kind": kind, "metadata": metadata}
    if fmt.report_source:
        header["source"] = SOURCE
    return header


def build_report(resource: ResourceRef, results: list[dict[str, Any]], existing: Mapping[str, Any] | None = None,
                 fmt: ReportFormat = DEFAULT_REPORT_FORMAT) -> dict[str, Any]:
    """The whole report object; with `existing`, ready for a PUT (its resourceVersion kept)."""
    metadata: dict[str, Any] = {"name": report_name(resource), "labels": dict(MANAGED_BY)}
    if resource.namespace:
        metadata["namespace"] = resource.namespace
    if resource.uid:
        metadata["ownerReferences"] = [{"apiVersion": resource.api_version, "kind": resource.kind,
                                        "name": resource.name, "uid": resource.uid}]
    old = (existing or {}).get("metadata") or {}
    if old.get("resourceVersion"):
        metadata["resourceVersion"] = old["resourceVersion"]
    return {**report_header(fmt, report_kind(resource, fmt), metadata),
            "scope": scope_of(resource), "summary": summary(results), "results": results}


def reports_from_entries(entries: Iterable[ReportEntry], metas: Mapping[PolicyId, PolicyMeta] | None = None,
                         fmt: ReportFormat = DEFAULT_REPORT_FORMAT) -> list[dict[str, Any]]:
    """Standalone mode: the results kept in memory, as the reports live mode would have written."""
    metas = metas or {}
    grouped: dict[tuple[str, str, str, str], tuple[ResourceRef, list[dict[str, Any]]]] = {}
    for entry in entries:
        ref = entry.resource
        key = (ref.api_version, ref.kind, ref.namespace, ref.name)
        current = grouped.get(key)
        new = [result_entry(entry, metas.get(entry.result.policy, PolicyMeta()))]
        results = merge_results(current[1] if current else [], new)
        grouped[key] = (ref if ref.uid or current is None else current[0], results)
    return [build_report(ref, results, fmt=fmt) for ref, results in (grouped[k] for k in sorted(grouped))]
