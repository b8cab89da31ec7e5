"""The conformance corpus (`quartermaster test` over the CEL categories) with every CEL policy forced onto the
reference route (`--cel-evaluation=reference`) and on its planned routes: the same result for every rule of
every resource of every suite. The planned routes are fast paths of the reference one; a difference is a
fast path that decides otherwise than Kubernetes' order of evaluation."""

import argparse
import io
import json

import pytest

from tests.testsuite.test_conformance import CATEGORIES, CORPUS
from webhook.policy.family import CelEvaluation
from webhook.testsuite.command import run_test_command


def _results(evaluation: CelEvaluation) -> dict[str, list[dict]]:
    out, err = io.StringIO(), io.StringIO()
    assert CORPUS is not None
    args = argparse.Namespace(paths=[str(CORPUS / c) for c in CATEGORIES], detailed_results=True, output="json", fail_only=False)
    run_test_command(args, out, err, cel_evaluation=evaluation)
    text = out.getvalue()
    suites = json.loads(text[: text.rstrip().rindex("\n")])
    return {suite["path"]: suite["results"] for suite in suites}


@pytest.mark.skipif(CORPUS is None, reason="the shared conformance corpus is not beside this checkout")
def test_the_reference_route_and_the_planned_routes_give_the_same_result_for_every_rule():
    planned = _results(CelEvaluation.DEFAULT)
    reference = _results(CelEvaluation.REFERENCE)
    assert planned.keys() == reference.keys()
    assert sum(len(rows) for rows in planned.values()) > 1300  # every expected result was compared
    differing = [(path, row, other) for path in planned for row, other in zip(planned[path], reference[path])
                 if row != other]
    assert [len(rows) for rows in planned.values()] == [len(rows) for rows in reference.values()]
    assert not differing, differing[:5]
