"""The HTML report in a real headless Chromium: rendered by `quartermaster report -o html`, loaded from
a file, screenshotted, and driven as a user drives it (filters, search, sorting, summary links)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
import yaml

from tests.browser import Browser
from tests.support import REPO, pid
from webhook.cli import main
from webhook.model.results import Action, Outcome, RuleResult, failed, passed
from webhook.reports.policyreport import PolicyMeta, build_report, result_entry
from webhook.reports.formats import render
from webhook.reports.sink import ReportEntry, ResourceRef

LONG = "checkpoint-writer-for-the-very-long-running-distributed-training-job-0"
QUOTA = PolicyMeta(severity="high", category="Quota")
LABELS = PolicyMeta(severity="low", category="Best practices")


def report(kind, ns, name, *results):
    ref = ResourceRef("v1", kind, ns, name, f"uid-{name}")
    return build_report(ref, [result_entry(ReportEntry(ref, r, 1_700_000_000.0), meta) for r, meta in results])


REPORTS = [
    report("Pod", "jdoe", "train", (failed(pid("profile-quota"), "gpu-quota", "over GPU quota in 'jdoe' (1 in use + 1 > 1)"), QUOTA),
           (passed(pid("profile-quota"), "storage-quota"), QUOTA)),
    report("Pod", "ml-team", LONG, (passed(pid("profile-quota"), "gpu-quota"), QUOTA),
           (failed(pid("require-labels"), "team", "add the label team", Action.AUDIT), LABELS)),
    report("PersistentVolumeClaim", "ml-team", "data", (RuleResult(pid("require-labels"), "team", Outcome.WARN, "label <team> missing"), LABELS)),
    report("Namespace", "", "jdoe", (passed(pid("profiles"), "owner"), PolicyMeta(category="Profiles"))),
]


def visible(page):
    return page.js("Array.from(document.querySelectorAll('#results tbody tr')).filter(r => !r.hidden)"
                   ".map(r => r.dataset.result + ' ' + r.dataset.policy + ' ' + r.dataset.namespace + ' ' + r.cells[6].textContent)")


@pytest.fixture
def report_file(tmp_path) -> Path:
    path = tmp_path / "report.html"
    path.write_text(render(REPORTS, "html", generated="generated in a test"))
    return path


async def test_summaries_filters_search_and_sorting(report_file, tmp_path):
    async with Browser(1600, 800) as page:
        await page.open(report_file)
        assert await page.js("document.title") == "Quartermaster policy reports"
        assert len(await visible(page)) == 6
        # per-policy summary: counts, severity and category from the policy annotations
        by_policy = await page.js("Array.from(document.querySelectorAll('#by-policy tbody tr')).map(r => "
                                  "Array.from(r.cells).map(c => c.textContent.trim()))")
        assert ["profile-quota", "high", "Quota", "2", "1", "", "", ""] in by_policy
        assert ["require-labels", "low", "Best practices", "", "1", "1", "", ""] in by_policy
        by_ns = await page.js("Array.from(document.querySelectorAll('#by-namespace tbody tr')).map(r => "
                              "Array.from(r.cells).map(c => c.textContent.trim()))")
        assert by_ns[0] == ["(cluster-scoped)", "1", "1", "", "", "", ""]
        assert ["ml-team", "2", "1", "1", "1", "", ""] in by_ns

        await page.choose("f-result", "fail")
        assert sorted(await visible(page)) == ["fail profile-quota jdoe train", f"fail require-labels ml-team {LONG}"]
        assert await page.js("document.getElementById('shown').textContent") == "2"
        await page.choose("f-namespace", "ml-team")
        assert await visible(page) == [f"fail require-labels ml-team {LONG}"]
        await page.click("#f-clear")
        await page.choose("f-scope", "cluster")
        assert await visible(page) == ["pass profiles - jdoe"]
        await page.choose("f-scope", "")
        await page.type("f-search", "<TEAM>")  # case-insensitive, over the text a user sees
        assert await visible(page) == ["warn require-labels ml-team data"]
        await page.type("f-search", "no such thing")
        assert await visible(page) == []
        assert await page.js("document.getElementById('no-match').hidden") is False
        await page.click("#f-clear")

        # a summary link filters the results by that policy
        await page.click("#by-policy a[data-value='require-labels']")
        assert {row.split()[1] for row in await visible(page)} == {"require-labels"}
        assert await page.js("document.getElementById('f-policy').value") == "require-labels"
        await page.click("#f-clear")

        # sorting: click "Name" sorts by name, a second click reverses
        await page.click("#results th[data-key='name']")
        names = [row.split()[-1] for row in await visible(page)]
        assert names == sorted(names, key=str.lower) or names == sorted(names)
        await page.click("#results th[data-key='name']")
        assert [row.split()[-1] for row in await visible(page)] == names[::-1]
        await page.click("#results th[data-key='result']")  # worst first: fail, warn, pass
        assert [row.split()[0] for row in await visible(page)][:3] == ["fail", "fail", "warn"]

        # full names never wrap: the long pod name's text lays out as one line box
        lines = await page.js("(function(){var c=Array.from(document.querySelectorAll('#results td.res'))"
                              f".find(td => td.textContent === {LONG!r}); var r=document.createRange();"
                              "r.selectNodeContents(c); return r.getClientRects().length;})()")
        assert lines == 1
        await page.screenshot(_shot_path(tmp_path, "report.png"))
        # nothing fetched but the page itself: no network, no CDN
        assert all(url.startswith("file://") for url in page.requests), page.requests


async def test_empty_report_says_why(tmp_path, capsys):
    state = tmp_path / "state"
    state.mkdir()
    (state / "ns.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}))
    args = ["report", "--policies", str(REPO / "policies"), "--state", str(state), "-o", "html"]
    assert await asyncio.to_thread(main, args) == 0  # the command runs its own event loop
    path = tmp_path / "empty.html"
    path.write_text(capsys.readouterr().out)
    async with Browser(900, 500) as page:
        await page.open(path)
        reason = await page.js("document.getElementById('empty-reason').textContent")
        assert reason.startswith("No policy results: no object of") and str(state) in reason
        assert await page.js("document.querySelector('#results')") is None
        await page.screenshot(_shot_path(tmp_path, "empty.png"))


def _shot_path(tmp_path: Path, name: str) -> Path:
    """QM_SCREENSHOTS=DIR keeps the screenshots for a person to look at."""
    keep = os.environ.get("QM_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        return Path(keep) / name
    return tmp_path / name
