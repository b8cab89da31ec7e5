"""Differential test: every CEL expression of the corpus and of this repository, through both backends.

Where cel-python can compile an expression, both backends must return equal results or both fail, on
realistic activations (each policy's own resources from the corpus plus a few corpus pods). The numbers
compared are printed (run with -s) and asserted to stay meaningful.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.cel.differential import (DEVICES, OfflineLookups, activation, corpus_pods, corpus_policies, corpus_root,
                                    repository_expressions)
from tests.cel.test_libraries import CASES, OBJ
from webhook.cel import CelCompiler, CelError

CPP, PY = CelCompiler("cel-expr-python"), CelCompiler("cel-python")
NONDETERMINISTIC = ("time.now", "random(")


@dataclass
class Tally:
    compared: int = 0
    evaluations: int = 0
    unsupported: int = 0          # cel-python refuses or cannot parse it
    unique: set = field(default_factory=set)
    unique_unsupported: set = field(default_factory=set)
    mismatches: list[str] = field(default_factory=list)


def _outcome(program: Any, act: dict) -> tuple[str, Any]:
    try:
        return "value", program.evaluate(act, OfflineLookups(), generated=[])
    except CelError:
        return "error", None


def compare(tally: Tally, env: str, expression: str, activations: list[dict]) -> None:
    if any(marker in expression for marker in NONDETERMINISTIC):
        return
    try:
        reference = PY.compile(expression, env)
    except CelError:
        tally.unsupported += 1
        tally.unique_unsupported.add((env, expression))
        return
    try:
        fast = CPP.compile(expression, env)
    except CelError as exc:
        # the C++ checker refuses at compile time what cel-python only fails at run time: both must fail
        fast = None
        compile_error = str(exc)
    tally.compared += 1
    tally.unique.add((env, expression))
    for act in activations:
        tally.evaluations += 1
        expected = _outcome(reference, act)
        actual = ("error", None) if fast is None else _outcome(fast, act)
        if expected != actual:
            detail = compile_error if fast is None else actual
            tally.mismatches.append(f"[{env}] {expression!r}: cel-python {expected} vs cel-expr-python {detail}")
            return


def _variables(variables: list[tuple[str, str]], env: str, act: dict) -> dict:
    """Variables in order, computed once with the default backend and shared by both."""
    values: dict = {}
    for name, expression in variables:
        try:
            values[name] = CPP.compile(expression, env).evaluate({**act, "variables": values}, OfflineLookups(), generated=[])
        except CelError:
            pass
    return values


@pytest.fixture(scope="module")
def root():
    found = corpus_root()
    if found is None:
        pytest.skip("the shared conformance corpus is not on this machine")
    return found


def test_corpus_expressions_agree(root):
    tally = Tally()
    pods = corpus_pods(root)
    for policy in corpus_policies(root):
        for obj in policy.resources + pods[:2]:
            act = activation(obj)
            act["variables"] = _variables(policy.variables, policy.env, act)
            for expression in dict.fromkeys([e for _, e in policy.variables] + policy.expressions):
                compare(tally, policy.env, expression, [act])
    print(f"\ncorpus: {len(tally.unique)} distinct expressions compared in {tally.evaluations} evaluations "
          f"(expression x resource); {len(tally.unique_unsupported)} distinct expressions skipped as not supported "
          f"by cel-python (optional syntax); "
          f"{len(tally.mismatches)} mismatches")
    assert not tally.mismatches, "\n".join(tally.mismatches[:20])
    assert len(tally.unique) > 200


def test_repository_expressions_agree():
    tally = Tally()
    objects = [activation(OBJ)] + [activation(p) for p in corpus_pods(corpus_root())] if corpus_root() else [activation(OBJ)]
    for env, expression in repository_expressions():
        acts = [{"device": d} for d in DEVICES] if env == "dra" else objects
        compare(tally, env, expression, acts)
    for expression, _ in CASES:
        compare(tally, "admission", expression, objects[:1])
    print(f"\nrepository: {len(tally.unique)} distinct expressions compared in {tally.evaluations} evaluations, "
          f"{tally.unsupported} not supported by cel-python, {len(tally.mismatches)} mismatches")
    assert not tally.mismatches, "\n".join(tally.mismatches[:20])
    assert tally.compared >= len(CASES)
