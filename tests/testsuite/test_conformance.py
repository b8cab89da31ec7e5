"""`quartermaster test` over the CEL categories of Kyverno's policy library (the shared conformance corpus).

Measures, never special-cases: the rate must stay at or above 95 % of expected results. The per-category
numbers are in docs/conformance.md.
"""

import argparse
import io
import json
from pathlib import Path

import pytest

from webhook.testsuite.command import run_test_command

CATEGORIES = ("best-practices-vpol", "best-practices-mpol", "best-practices-gpol", "other-vpol", "other-mpol",
              "other-gpol", "pod-security-vpol")


def _corpus() -> Path | None:
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "shared" / "conformance" / "kyverno-policies"
        if candidate.is_dir():
            return candidate
    return None


CORPUS = _corpus()


@pytest.mark.skipif(CORPUS is None, reason="the shared conformance corpus is not beside this checkout")
def test_cel_categories_pass_at_least_95_percent():
    out, err = io.StringIO(), io.StringIO()
    args = argparse.Namespace(paths=[str(CORPUS / c) for c in CATEGORIES], detailed_results=True, output="json", fail_only=False)
    code = run_test_command(args, out, err)
    text = out.getvalue()
    summary = text.rstrip().splitlines()[-1]
    suites = json.loads(text[: text.rstrip().rindex("\n")])
    passed = sum(s["passed"] for s in suites)
    failed = sum(s["failed"] for s in suites)
    assert summary == f"{passed} passed, {failed} failed"
    assert code == (1 if failed else 0)
    per_category = {c: [0, 0] for c in CATEGORIES}
    for suite in suites:
        category = Path(suite["path"]).relative_to(CORPUS).parts[0]
        per_category[category][0] += suite["passed"]
        per_category[category][1] += suite["failed"]
    print({c: f"{p}/{p + f}" for c, (p, f) in per_category.items()})
    assert passed + failed > 1300  # every expected result was counted
    assert passed / (passed + failed) >= 0.95, [r for s in suites for r in s["results"] if r["RESULT"] == "Fail"][:20]
    assert all(p > 0 for p, _ in per_category.values())
