"""The HTML report: one self-contained page (inline style and script, nothing fetched).

What Policy Reporter's UI gives, in one file: totals, a summary per policy (with severity and
category from the policy annotations) and per namespace, and the results table with filters by
result, policy, namespace and scope, a search box and sortable columns. Without JavaScript the
page still shows every row; the script only hides and reorders them.
"""

from __future__ import annotations

import html
from collections import defaultdict
from typing import Any, Iterable, Mapping

from webhook.reports.policyreport import OUTCOMES
from webhook.reports.render import ORDER, ReportRow, rows, totals

CLUSTER = "-"  # data-namespace of cluster-scoped rows (no namespace can be named "-")
_SEVERITY_RANK = {"critical": 0, "high": 1, "medium": 2, "low": 3, "info": 4}
_esc = html.escape

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em 2em; color: #1f2328; }
h1 { font-size: 1.4em; margin-bottom: .2em; } h2 { font-size: 1.1em; margin: 1.4em 0 .4em; }
.muted { color: #59636e; }
table { border-collapse: collapse; margin-top: .4em; }
th, td { text-align: left; padding: .3em .6em; border-bottom: 1px solid #d1d9e0; vertical-align: top; }
th { background: #f6f8fa; position: sticky; top: 0; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.name, td.res { white-space: nowrap; } td.msg { min-width: 16em; }
.wide { width: 100%; } .scroll { overflow-x: auto; }
.summaries { display: flex; flex-wrap: wrap; gap: 2em; }
.badge { display: inline-block; min-width: 3.5em; text-align: center; border-radius: 1em; padding: 0 .6em;
         font-weight: 600; font-size: .85em; white-space: nowrap; }
.fail { background: #ffebe9; color: #a40e26; } .error { background: #fff1e5; color: #9a3412; }
.warn { background: #fff8c5; color: #7d4e00; } .pass { background: #dafbe1; color: #116329; }
.skip { background: #eff2f5; color: #59636e; }
.sev-critical, .sev-high { color: #a40e26; font-weight: 600; } .sev-medium { color: #9a3412; }
.totals > span { margin-right: 1.4em; }
.filters { display: flex; flex-wrap: wrap; gap: .8em; align-items: end; margin: 1em 0 .4em;
           padding: .6em .8em; background: #f6f8fa; border-radius: .4em; }
.filters label { display: flex; flex-direction: column; font-size: .85em; color: #59636e; }
.filters select, .filters input { font: inherit; padding: .2em .3em; }
th[data-key] { cursor: pointer; user-select: none; white-space: nowrap; }
th[aria-sort=ascending]::after { content: " \\25B2"; } th[aria-sort=descending]::after { content: " \\25BC"; }
a.set { color: inherit; text-decoration: underline dotted; cursor: pointer; }
.empty { padding: 1em; background: #fff8c5; border-radius: .4em; }
"""

# Filters hide rows; sorting reorders them by each cell's data-v (or its text); the summary links
# set a filter. Kept small and dependency-free: the page must work offline, from a file.
_SCRIPT = """
(function () {
  var $ = function (id) { return document.getElementById(id); };
  var body = document.querySelector('#results tbody');
  var rows = Array.prototype.slice.call(body.querySelectorAll('tr[data-result]'));
  var ids = ['f-result', 'f-policy', 'f-namespace', 'f-scope'];
  function apply() {
    var want = {}; ids.forEach(function (id) { want[id] = $(id).value; });
    var q = $('f-search').value.trim().toLowerCase(), shown = 0;
    rows.forEach(function (tr) {
      var d = tr.dataset;
      var ok = (!want['f-result'] || d.result === want['f-result']) &&
               (!want['f-policy'] || d.policy === want['f-policy']) &&
               (!want['f-namespace'] || d.namespace === want['f-namespace']) &&
               (!want['f-scope'] || d.scope === want['f-scope']) &&
               (!q || tr.textContent.toLowerCase().indexOf(q) >= 0);
      tr.hidden = !ok; if (ok) shown++;
    });
    $('shown').textContent = shown;
    $('no-match').hidden = shown > 0 || rows.length === 0;
  }
  ids.forEach(function (id) { $(id).addEventListener('change', apply); });
  $('f-search').addEventListener('input', apply);
  $('f-clear').addEventListener('click', function () {
    ids.forEach(function (id) { $(id).value = ''; }); $('f-search').value = ''; apply();
  });
  document.querySelectorAll('a.set').forEach(function (a) {
    a.addEventListener('click', function (e) {
      e.preventDefault(); $(a.dataset.filter).value = a.dataset.value; apply();
      $('results').scrollIntoView();
    });
  });
  var heads = document.querySelectorAll('#results th[data-key]');
  heads.forEach(function (th, col) {
    th.addEventListener('click', function () {
      var dir = th.getAttribute('aria-sort') === 'ascending' ? -1 : 1;
      heads.forEach(function (h) { h.removeAttribute('aria-sort'); });
      th.setAttribute('aria-sort', dir > 0 ? 'ascending' : 'descending');
      var key = function (tr) { var c = tr.cells[col]; return c.dataset.v !== undefined ? c.dataset.v : c.textContent; };
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        var n = (x !== '' && y !== '' && !isNaN(x) && !isNaN(y)) ? x - y : x.localeCompare(y);
        return dir * n;
      });
      rows.forEach(function (tr) { body.appendChild(tr); });
    });
  });
  apply();
})();
"""


def _badge(result: str, text: str | None = None) -> str:
    return f'<span class="badge {_esc(result)}">{_esc(text or result)}</span>'


def _filter_link(filter_id: str, value: str, text: str) -> str:
    return f'<a class="set" href="#results" data-filter="{filter_id}" data-value="{_esc(value)}">{_esc(text)}</a>'


def _counts_cells(counts: Mapping[str, int]) -> str:
    return "".join(f'<td class="num">{counts[o] or ""}</td>' for o in OUTCOMES)


def _count_heads() -> str:
    return "".join(f'<th class="num">{_badge(o)}</th>' for o in OUTCOMES)


def policy_summary(all_rows: Iterable[ReportRow]) -> str:
    counts: dict[str, dict[str, int]] = defaultdict(lambda: {o: 0 for o in OUTCOMES})
    meta: dict[str, tuple[str, str]] = {}
    for r in all_rows:
        counts[r.policy][r.result] = counts[r.policy].get(r.result, 0) + 1
        severity, category = meta.get(r.policy, ("", ""))
        meta[r.policy] = (severity or r.severity, category or r.category)
    lines = [f'<tr><td class="name">{_filter_link("f-policy", p, p)}</td>'
             f'<td class="sev-{_esc(meta[p][0])}">{_esc(meta[p][0])}</td><td>{_esc(meta[p][1])}</td>'
             f"{_counts_cells(counts[p])}</tr>"
             for p in sorted(counts, key=lambda p: (-counts[p]["fail"] - counts[p]["error"], p))]
    return ('<section><h2>By policy</h2><table id="by-policy"><thead><tr><th>Policy</th><th>Severity</th>'
            f'<th>Category</th>{_count_heads()}</tr></thead><tbody>{"".join(lines)}</tbody></table></section>')


def namespace_summary(all_rows: Iterable[ReportRow]) -> str:
    counts: dict[str, dict[str, int]] = defaultdict(lambda: {o: 0 for o in OUTCOMES})
    resources: dict[str, set[str]] = defaultdict(set)
    for r in all_rows:
        key = r.namespace or CLUSTER
        counts[key][r.result] = counts[key].get(r.result, 0) + 1
        resources[key].add(r.resource)
    def label(ns: str) -> str:
        return "(cluster-scoped)" if ns == CLUSTER else ns
    lines = [f'<tr><td class="name">{_filter_link("f-namespace", ns, label(ns))}</td>'
             f'<td class="num">{len(resources[ns])}</td>{_counts_cells(counts[ns])}</tr>'
             for ns in sorted(counts, key=lambda n: (n != CLUSTER, n))]
    return ('<section><h2>By namespace</h2><table id="by-namespace"><thead><tr><th>Namespace</th>'
            f'<th class="num">Resources</th>{_count_heads()}</tr></thead><tbody>{"".join(lines)}</tbody></table></section>')


def _options(filter_id: str, label: str, values: Iterable[tuple[str, str]]) -> str:
    opts = "".join(f'<option value="{_esc(v)}">{_esc(t)}</option>' for v, t in values)
    return f'<label>{label}<select id="{filter_id}"><option value="">all</option>{opts}</select></label>'


def filters(all_rows: list[ReportRow]) -> str:
    namespaces = sorted({r.namespace for r in all_rows if r.namespace})
    ns_options = ([(CLUSTER, "(cluster-scoped)")] if any(not r.namespace for r in all_rows) else [])
    return ('<div class="filters">'
            + _options("f-result", "Result", [(o, o) for o in sorted(OUTCOMES, key=lambda o: ORDER[o])])
            + _options("f-policy", "Policy", [(p, p) for p in sorted({r.policy for r in all_rows})])
            + _options("f-namespace", "Namespace", ns_options + [(n, n) for n in namespaces])
            + _options("f-scope", "Scope", [("namespaced", "namespaced"), ("cluster", "cluster-scoped")])
            + '<label>Search<input id="f-search" type="search" placeholder="name, message, rule..." size="28"></label>'
            + '<button id="f-clear" type="button">Clear</button>'
            + f'<span class="muted">showing <b id="shown">{len(all_rows)}</b> of {len(all_rows)} results</span></div>')


def _result_row(r: ReportRow) -> str:
    scope = "namespaced" if r.namespace else "cluster"
    ns_cell = _esc(r.namespace) if r.namespace else '<span class="muted">(cluster)</span>'
    return (f'<tr data-result="{_esc(r.result)}" data-policy="{_esc(r.policy)}" '
            f'data-namespace="{_esc(r.namespace or CLUSTER)}" data-scope="{scope}">'
            f'<td data-v="{ORDER.get(r.result, 9)}">{_badge(r.result, r.result_text)}</td>'
            f'<td class="name" title="{_esc(r.policy_kind)}">{_esc(r.policy)}</td><td class="name">{_esc(r.rule)}</td>'
            f'<td data-v="{_SEVERITY_RANK.get(r.severity, 9)}" class="sev-{_esc(r.severity)}">{_esc(r.severity)}</td>'
            f'<td class="res" data-v="{_esc(r.namespace or CLUSTER)}">{ns_cell}</td>'
            f'<td class="res">{_esc(r.kind)}</td><td class="res">{_esc(r.name)}</td><td class="msg">{_esc(r.message)}</td></tr>')


# Category lives in the per-policy summary: one column fewer keeps full names and messages side by side.
_RESULT_HEADS = ("Result", "Policy", "Rule", "Severity", "Namespace", "Kind", "Name", "Message")


def render_html(reports: list[Mapping[str, Any]], title: str = "Quartermaster policy reports",
                generated: str = "", reason: str = "") -> str:
    all_rows = rows(reports)
    counts = totals(reports)
    heads = "".join(f'<th data-key="{h.lower()}">{h}</th>' for h in _RESULT_HEADS)
    if all_rows:
        content = (f'<div class="summaries">{policy_summary(all_rows)}{namespace_summary(all_rows)}</div>'
                   f"<h2>Results</h2>{filters(all_rows)}"
                   f'<div class="scroll"><table id="results" class="wide"><thead><tr>{heads}</tr></thead><tbody>'
                   + "\n".join(_result_row(r) for r in all_rows)
                   + '</tbody></table></div><p id="no-match" class="muted" hidden>No result matches these filters.</p>'
                   f"<script>{_SCRIPT}</script>")
    else:
        content = f'<p id="empty-reason" class="empty">No policy results: {_esc(reason or "no report holds any result")}.</p>'
    summary = "".join(f'<span>{_badge(o, f"{counts[o]} {o}")}</span>' for o in OUTCOMES)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_esc(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{_STYLE}</style></head>
<body><h1>{_esc(title)}</h1>
<p class="muted">{len(reports)} reports, {len(all_rows)} results{_esc(' · ' + generated) if generated else ''}</p>
<p class="totals" id="totals">{summary}</p>
{content}
</body></html>
"""
