"""Conformance with Kyverno's own policy library: `quartermaster test` over the ClusterPolicy categories.

Counts one row per expected (policy, rule, resource), as `kyverno test` does; the rates and every remaining
failure are explained in docs/conformance.md (Kyverno section). Corpus names are never special-cased.
"""

import asyncio
import os
from pathlib import Path

import pytest

from tests.support import REPO
from webhook.testsuite.harness import build_world
from webhook.testsuite.load import discover, read_suites
from webhook.testsuite.run import RunOptions, run_suites



# ../shared next to the repository (as in /work/main), or two levels up from a worktree (/work/wt/<name>)
CORPUS = next((p for p in (Path(os.environ.get("QUARTERMASTER_CONFORMANCE", "/nonexistent")),
                           REPO.parent / "shared" / "conformance" / "kyverno-policies",
                           REPO.parent.parent / "shared" / "conformance" / "kyverno-policies") if p.is_dir()),
              REPO.parent / "shared" / "conformance" / "kyverno-policies")
CATEGORIES = ("best-practices", "other", "pod-security", "best-practices-cel", "other-cel", "pod-security-cel")

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"conformance corpus not found at {CORPUS}")


def _rates() -> dict[str, tuple[int, int]]:
    rates = {}
    for category in CATEGORIES:
        suites = [s for path in discover([str(CORPUS / category)]) for s in read_suites(path)]
        reports = asyncio.run(run_suites(suites, RunOptions(build_world=build_world)))
        rates[category] = (sum(r.passed for r in reports), sum(len(r.rows) for r in reports))
    return rates


def test_kyverno_library_categories_pass_at_least_95_percent():
    rates = _rates()
    passed = sum(p for p, _ in rates.values())
    total = sum(t for _, t in rates.values())
    summary = ", ".join(f"{c} {p}/{t}" for c, (p, t) in rates.items())
    assert total > 2500, summary  # the corpus is all there
    for category, (ok, count) in rates.items():
        assert ok / count >= 0.95, f"{category}: {summary}"
    assert passed / total >= 0.99, summary  # measured 2940/2940 (docs/conformance.md)
