"""Policy reports in the format `quartermaster report -o` asks for."""

from __future__ import annotations

from typing import Any, Mapping

from webhook.reports.html_page import render_html
from webhook.reports.render import render_json, render_table, render_yaml


def render(reports: list[Mapping[str, Any]], fmt: str, generated: str = "", reason: str = "") -> str:
    """`reason` says why there are no results, when there are none (shown by table and html)."""
    if fmt == "json":
        return render_json(reports)
    if fmt == "yaml":
        return render_yaml(reports)
    if fmt == "html":
        return render_html(reports, generated=generated, reason=reason)
    return render_table(reports, reason)
