"""`quartermaster report` output: a table, JSON or YAML (a List of the reports), or one HTML page.

Rendering reads PolicyReport objects only, so live reports and standalone results look the same.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

import yaml

from webhook.model.quickinit import frozen_dataclass
from webhook.model.shapes import plain
from webhook.reports.policyreport import OUTCOMES

FORMATS = ("table", "json", "yaml", "html")
ORDER = {"fail": 0, "error": 1, "warn": 2, "pass": 3, "skip": 4}


@frozen_dataclass
class ReportRow:
    namespace: str  # "" for cluster-scoped resources
    kind: str
    name: str
    policy: str
    rule: str
    result: str
    mode: str
    message: str
    severity: str = ""
    category: str = ""
    policy_kind: str = ""  # properties.policyKind: tells apart two kinds' policies of one name

    @property
    def resource(self) -> str:  # "Pod jdoe/train-0", "Namespace jdoe"
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"

    @property
    def audited(self) -> bool:
        """A failure that was reported and admitted (Audit), not enforced."""
        return self.mode == "Audit" and self.result in ("fail", "error", "warn")

    @property
    def result_text(self) -> str:
        return f"{self.result} (audit)" if self.audited else self.result


def rows(reports: Iterable[Mapping[str, Any]]) -> list[ReportRow]:
    out = []
    for report in reports:
        scope = report.get("scope") or {}
        namespace = str(scope.get("namespace") or (report.get("metadata") or {}).get("namespace") or "")
        for result in report.get("results") or []:
            out.append(ReportRow(namespace, str(scope.get("kind", "?")), str(scope.get("name", "")),
                           str(result.get("policy", "")), str(result.get("rule", "")), str(result.get("result", "")),
                           str((result.get("properties") or {}).get("mode", "")),
                           " ".join(str(result.get("message", "")).split()),
                           str(result.get("severity", "")), str(result.get("category", "")),
                           str((result.get("properties") or {}).get("policyKind", ""))))
    out.sort(key=lambda r: (ORDER.get(r.result, 9), r.namespace, r.kind, r.name, r.policy, r.rule))
    return out


def totals(reports: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    counts = {outcome: 0 for outcome in OUTCOMES}
    for report in reports:
        for outcome, count in (report.get("summary") or {}).items():
            if outcome in counts and isinstance(count, int):
                counts[outcome] += count
    return counts


def render_table(reports: list[Mapping[str, Any]], reason: str = "") -> str:
    table = [("POLICY", "RULE", "RESOURCE", "RESULT", "MESSAGE")]
    table += [(r.policy, r.rule, r.resource, r.result_text, r.message) for r in rows(reports)]
    widths = [max(len(line[i]) for line in table) for i in range(4)]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(line[:4])) + "  " + line[4] for line in table]
    if len(table) == 1 and reason:
        lines.append(f"no results: {reason}")
    counts = totals(reports)
    lines.append(f"{len(reports)} reports: " + ", ".join(f"{counts[o]} {o}" for o in OUTCOMES))
    return "\n".join(lines) + "\n"


def as_list(reports: list[Mapping[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": [plain(r) for r in reports]}


def render_json(reports: list[Mapping[str, Any]]) -> str:
    return json.dumps(as_list(reports), indent=2, sort_keys=False) + "\n"


def render_yaml(reports: list[Mapping[str, Any]]) -> str:
    return yaml.safe_dump(as_list(reports), sort_keys=False, default_flow_style=False)
