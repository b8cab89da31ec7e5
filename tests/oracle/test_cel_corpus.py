"""Every CEL expression of the shared corpus and of this repository, through our three paths, against Kubernetes'
own CEL (the oracle): the same value, type for type, or an error on both sides."""

from __future__ import annotations

import pytest

from tests.cel.differential import (activation, corpus_pods, corpus_policies, corpus_root,
                                    repository_expressions)
from tests.cel.test_libraries import CASES, OBJ
from tests.oracle.differential import Tally, compare

pytestmark = pytest.mark.oracle
NONDETERMINISTIC = ("time.now", "random(", "now()")


def _bindings(obj: dict) -> dict:
    act = activation(obj)
    return {k: v for k, v in act.items() if k != "variables" and v is not None}


def _deterministic(expression: str) -> bool:
    return not any(marker in expression for marker in NONDETERMINISTIC)


def test_corpus_expressions_agree_with_kubernetes(cel_oracle):
    root = corpus_root()
    if root is None:
        pytest.skip("the shared conformance corpus is not on this machine")
    tally = Tally()
    pods = corpus_pods(root)
    expressions = 0
    for policy in corpus_policies(root):
        oracle_env = "mutating" if policy.env == "mutating" else "validating"
        for obj in policy.resources + pods[:2]:
            bindings = _bindings(obj)
            for expression in dict.fromkeys(policy.expressions):
                if _deterministic(expression):
                    expressions += 1
                    compare(cel_oracle, tally, expression, bindings, policy.variables, oracle_env)
    print(f"\ncorpus: {expressions} expression evaluations; {tally.summary()}")
    assert tally.evaluations["cel-expr-python"] > 1000
    assert not tally.differences, "\n".join(tally.differences[:40])


def test_repository_expressions_agree_with_kubernetes(cel_oracle):
    root = corpus_root()
    objects = [OBJ] + (corpus_pods(root) if root else [])
    tally = Tally()
    cases = [e for env, e in repository_expressions() if env != "dra"] + [e for e, _ in CASES]
    for expression in dict.fromkeys(cases):
        if _deterministic(expression):
            for obj in objects[:2]:
                compare(cel_oracle, tally, expression, _bindings(obj))
    print(f"\nrepository: {tally.summary()}")
    assert tally.evaluations["cel-expr-python"] >= len(CASES)
    assert not tally.differences, "\n".join(tally.differences[:40])
