"""Optionals never reach Python inside a list or map (webhook.cel.optionals): the default runtime crashes
converting one, so such an expression does not compile, and every other one evaluates as before."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.cel import test_source as source_tests
from webhook.cel import CelCompiler, CelError

CPP = CelCompiler("cel-expr-python")
OBJECT = {"a": 1, "b": [1, 2], "m": {"x": 1}}


@pytest.mark.parametrize("text", [
    "[object.?a]",                                   # returned: a list holding an optional
    "{'k': object.?a}",                              # a map holding one (the runtime's segmentation fault)
    "{optional.none(): 1}",                          # as a key
    "[1, 2].map(x, object.?a)",                      # built by a macro
    "cel.bind(v, object.?a, [v])",                   # through a bound name
    "dyn([optional.none()])",                        # behind dyn
    "object.a > 0 ? {'k': object.?m} : {}",          # one branch of a conditional
    "[[object.?a]][0]",                              # an element that holds one
    "optional.of([object.?a])",                      # inside an optional
    "[object.?a] + [object.?b]",                     # concatenated
    "{'first': object.b.first()}",                   # a list's first() and last() are optionals too
    "[object.b.last()]",
])
def test_a_value_holding_an_optional_does_not_compile(text):
    with pytest.raises(CelError, match=r"does not compile: .*holding an optional .*write the element as `\?x`"):
        CPP.compile(text, env=("kyverno" if "cel.bind" in text else "admission"))


@pytest.mark.parametrize("text", [
    "[optional.none()].isSorted()",                  # our functions get their arguments converted
    "[{'k': object.?a}].isSorted()",
])
def test_a_python_function_given_a_list_holding_an_optional_does_not_compile(text):
    with pytest.raises(CelError, match=r"isSorted\(\) may be given a list or map holding an optional"):
        CPP.compile(text, env="admission")


@pytest.mark.parametrize("text,expected", [
    ("[?object.?a, ?object.?nothing, dyn(2)]", [1, 2]),  # `?e`: the value, if any, is the element
    ("{?'k': object.?a, ?'j': object.?nothing}", {"k": 1}),
    ("[object.?a].size()", 1),                      # optionals inside, never converted
    ("[object.?a][0].orValue(2)", 1),
    ("{'k': optional.none()}.k.hasValue()", False),
    ("[object.?nothing] == [optional.none()]", True),
    ("cel.bind(v, object.?a, [v.orValue(3)])", [1]),
    ("[1, 2].map(x, object.?m.?x.orValue(0) + x)", [2, 3]),
    ("object.?m.optMap(m, m.x).orValue(0)", 1),
    ("object.b.filter(x, object.?a.hasValue())", [1, 2]),
    ("[?object.?a, dyn(3)].isSorted()", True),
    ("[object.b.first().orValue(0), object.b.last().value()]", [1, 2]),
])
def test_optionals_used_inside_an_expression_evaluate_as_before(text, expected):
    assert CPP.compile(text, env=("kyverno" if "cel.bind" in text else "admission")).evaluate({"object": OBJECT}) == expected


def _run(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=120)


def test_the_runtime_still_crashes_on_a_map_holding_an_optional():
    """Why the check exists. When this fails, the runtime was fixed and webhook.cel.optionals may go."""
    done = _run("""
        from cel_expr_python import cel
        from cel_expr_python.ext import ext_optional
        env = cel.NewEnv(extensions=[ext_optional.ExtOptional()])
        env.compile("{'k': optional.none()}").eval(data={}).plain_value()
    """)
    assert done.returncode < 0, (done.returncode, done.stderr[-500:])  # killed by a signal (SIGSEGV)


# Random expressions rich in optionals, each compiled and (when it compiles) evaluated, in a child process: a
# crash kills the child, and the test sees it.
_SOUNDNESS = """
import json, random, sys
sys.path.insert(0, {root!r})
from tests.cel.test_optionals import random_expression
from webhook.cel import CelCompiler, CelError
cpp = CelCompiler("cel-expr-python")
counts = {{"refused": 0, "evaluated": 0, "other": 0}}
rng = random.Random({seed})
for _ in range(400):
    text = random_expression(rng, 3)
    try:
        program = cpp.compile(text, env=("kyverno" if "cel.bind" in text else "admission"))
    except CelError as exc:
        counts["refused" if "holding an optional" in str(exc) else "other"] += 1
        continue
    try:
        program.evaluate({{"object": {object}}})
    except CelError:
        pass
    counts["evaluated"] += 1
print(json.dumps(counts))
"""

_LEAVES = ["object.a", "object.b", "object.m", "object.?a", "object.?m.?x", "object.b[?5]", "optional.none()",
           "optional.of(object.a)", "object.b.first()", "[object.a].last()", "1", "'s'"]
_SHAPES = [
    lambda rng, sub: f"[{sub()}, {sub()}]",
    lambda rng, sub: f"[?{sub()}]",
    lambda rng, sub: f"{{'k': {sub()}}}",
    lambda rng, sub: f"{{?'k': {sub()}}}",
    lambda rng, sub: f"{sub()}.orValue({sub()})",
    lambda rng, sub: f"{sub()}.value()",
    lambda rng, sub: f"{sub()}.hasValue()",
    lambda rng, sub: f"optional.of({sub()})",
    lambda rng, sub: f"{sub()}.?k",
    lambda rng, sub: f"{sub()}[0]",
    lambda rng, sub: f"cel.bind(v, {sub()}, [v, {sub()}])",
    lambda rng, sub: f"object.b.map(x, {sub()})",
    lambda rng, sub: f"{sub()}.isSorted()",
    lambda rng, sub: f"size({sub()})",
    lambda rng, sub: f"dyn({sub()})",
    lambda rng, sub: f"object.a > 0 ? {sub()} : {sub()}",
    lambda rng, sub: f"{sub()} + {sub()}",
]


def random_expression(rng, depth: int) -> str:
    return source_tests.random_expression(rng, depth, _LEAVES, _SHAPES, parenthesise=False)


@pytest.mark.parametrize("seed", range(3))
def test_nothing_that_compiles_crashes_the_runtime(seed):
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    done = _run(_SOUNDNESS.format(root=root, seed=seed, object=repr(OBJECT)))
    assert done.returncode == 0, (done.returncode, done.stderr[-800:])
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    assert counts["evaluated"] > 60 and counts["refused"] > 15, counts
