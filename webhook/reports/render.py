"""`quartermaster report` output: a table, JSON (a List of the reports), or one HTML page.

Rendering reads PolicyReport objects only, so live reports and standalone results look the same.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from webhook.reports.policyreport import OUTCOMES

FORMATS = ("table", "json", "html")
_ORDER = {"fail": 0, "error": 1, "warn": 2, "pass": 3, "skip": 4}


@dataclass(frozen=True)
class Row:
    namespace: str
    resource: str  # "Pod jdoe/train-0"
    policy: str
    rule: str
    result: str
    mode: str
    message: str


def rows(reports: Iterable[Mapping[str, Any]]) -> list[Row]:
    out = []
    for report in reports:
        scope = report.get("scope") or {}
        namespace = str(scope.get("namespace") or (report.get("metadata") or {}).get("namespace") or "")
        name = f"{namespace}/{scope.get('name', '')}" if namespace else str(scope.get("name", ""))
        resource = f"{scope.get('kind', '?')} {name}"
        for result in report.get("results") or []:
            out.append(Row(namespace, resource, str(result.get("policy", "")), str(result.get("rule", "")),
                           str(result.get("result", "")), str((result.get("properties") or {}).get("mode", "")),
                           " ".join(str(result.get("message", "")).split())))
    out.sort(key=lambda r: (_ORDER.get(r.result, 9), r.namespace, r.resource, r.policy, r.rule))
    return out


def totals(reports: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    counts = {outcome: 0 for outcome in OUTCOMES}
    for report in reports:
        for outcome, count in (report.get("summary") or {}).items():
            if outcome in counts and isinstance(count, int):
                counts[outcome] += count
    return counts


def _result_text(row: Row) -> str:
    return f"{row.result} (audit)" if row.mode == "Audit" and row.result in ("fail", "error", "warn") else row.result


def render_table(reports: list[Mapping[str, Any]]) -> str:
    table = [("POLICY", "RULE", "RESOURCE", "RESULT", "MESSAGE")]
    table += [(r.policy, r.rule, r.resource, _result_text(r), r.message) for r in rows(reports)]
    widths = [max(len(line[i]) for line in table) for i in range(4)]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(line[:4])) + "  " + line[4] for line in table]
    counts = totals(reports)
    lines.append(f"{len(reports)} reports: " + ", ".join(f"{counts[o]} {o}" for o in OUTCOMES))
    return "\n".join(lines) + "\n"


def render_json(reports: list[Mapping[str, Any]]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(reports)}, indent=2, sort_keys=False) + "\n"


_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #1f2328; }
h1 { font-size: 1.4em; } .muted { color: #59636e; }
table { border-collapse: collapse; width: 100%; margin-top: 1em; }
th, td { text-align: left; padding: .35em .6em; border-bottom: 1px solid #d1d9e0; vertical-align: top; }
th { background: #f6f8fa; position: sticky; top: 0; }
.badge { display: inline-block; min-width: 3.5em; text-align: center; border-radius: 1em; padding: 0 .6em;
         font-weight: 600; font-size: .85em; }
.fail { background: #ffebe9; color: #a40e26; } .error { background: #fff1e5; color: #9a3412; }
.warn { background: #fff8c5; color: #7d4e00; } .pass { background: #dafbe1; color: #116329; }
.skip { background: #eff2f5; color: #59636e; }
.summary span { margin-right: 1.2em; } td.msg { max-width: 60em; }
"""


def render_html(reports: list[Mapping[str, Any]], title: str = "Quartermaster policy reports",
                generated: str = "") -> str:
    esc = html.escape
    counts = totals(reports)
    summary = "".join(f'<span><span class="badge {o}">{counts[o]}</span> {o}</span>' for o in OUTCOMES)
    body_rows = "\n".join(
        f"<tr><td>{esc(r.namespace)}</td><td>{esc(r.resource)}</td><td>{esc(r.policy)}</td><td>{esc(r.rule)}</td>"
        f'<td><span class="badge {esc(r.result)}">{esc(_result_text(r))}</span></td><td class="msg">{esc(r.message)}</td></tr>'
        for r in rows(reports))
    empty = '<tr><td colspan="6" class="muted">No results.</td></tr>'
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{_STYLE}</style></head>
<body><h1>{esc(title)}</h1>
<p class="muted">{len(reports)} reports{esc(' · ' + generated) if generated else ''}</p>
<p class="summary">{summary}</p>
<table><thead><tr><th>Namespace</th><th>Resource</th><th>Policy</th><th>Rule</th><th>Result</th><th>Message</th></tr></thead>
<tbody>
{body_rows or empty}
</tbody></table></body></html>
"""


def render(reports: list[Mapping[str, Any]], fmt: str, generated: str = "") -> str:
    if fmt == "json":
        return render_json(reports)
    if fmt == "html":
        return render_html(reports, generated=generated)
    return render_table(reports)
