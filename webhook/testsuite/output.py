"""Print suite results: a table per suite (or JSON), then the last line `N passed, N failed`."""

from __future__ import annotations

import json
from typing import Any, TextIO

import yaml

from webhook.model.quickinit import frozen_dataclass
from webhook.testsuite.check import CheckRow

HEADERS = ("ID", "POLICY", "RULE", "RESOURCE", "RESULT", "REASON")


@frozen_dataclass
class SuiteReport:
    path: str
    name: str
    rows: tuple[CheckRow, ...]

    @property
    def failed(self) -> int:
        return sum(not r.ok for r in self.rows)

    @property
    def passed(self) -> int:
        return sum(r.ok for r in self.rows)


def _cells(index: int, row: CheckRow, detailed: bool) -> list[str]:
    cells = [str(index), row.policy, row.rule, row.resource, "Pass" if row.ok else "Fail", row.reason]
    if detailed:
        cells.append(" ".join(row.message.split()))
    return cells


def _shown(report: SuiteReport, fail_only: bool) -> list[tuple[int, CheckRow]]:
    """The rows to print with their numbers in the whole suite (`--fail-only`: the failures alone)."""
    return [(i, row) for i, row in enumerate(report.rows, 1) if not (fail_only and row.ok)]


def write_tables(reports: list[SuiteReport], out: TextIO, detailed: bool = False, fail_only: bool = False) -> None:
    for report in reports:
        shown = _shown(report, fail_only)
        if fail_only and not shown:
            continue
        out.write(f"\nTest {report.name} ({report.path}):\n")
        headers = list(HEADERS) + (["MESSAGE"] if detailed else [])
        rows = [headers] + [_cells(i, r, detailed) for i, r in shown]
        widths = [max(len(row[c]) for row in rows) for c in range(len(headers) - 1)]
        for row in rows:
            out.write("  " + " | ".join(cell.ljust(widths[c]) if c < len(widths) else cell
                                        for c, cell in enumerate(row)).rstrip() + "\n")


def results_document(reports: list[SuiteReport], detailed: bool = False, fail_only: bool = False) -> list[dict[str, Any]]:
    """What `-o json` and `-o yaml` print: per suite, its counts and its (shown) results."""
    doc = []
    for report in reports:
        rows = []
        for i, row in _shown(report, fail_only):
            item: dict[str, Any] = dict(zip(HEADERS, _cells(i, row, False)))
            item["ID"] = i
            item["EXPECTED"] = row.expected
            if detailed:
                item["MESSAGE"] = row.message
            rows.append(item)
        doc.append({"suite": report.name, "path": report.path, "passed": report.passed, "failed": report.failed,
                    "results": rows})
    return doc


def write_json(reports: list[SuiteReport], out: TextIO, detailed: bool = False, fail_only: bool = False) -> None:
    out.write(json.dumps(results_document(reports, detailed, fail_only), indent=2) + "\n")


def write_yaml(reports: list[SuiteReport], out: TextIO, detailed: bool = False, fail_only: bool = False) -> None:
    out.write(yaml.safe_dump(results_document(reports, detailed, fail_only), sort_keys=False))


def summary_line(reports: list[SuiteReport]) -> str:
    return f"{sum(r.passed for r in reports)} passed, {sum(r.failed for r in reports)} failed"
