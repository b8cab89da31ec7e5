"""What Kubernetes 1.34's CEL answers where ours answered otherwise, found by the oracle differential
(tests/oracle; docs/cel-differences.md, "Fixed by the differential"). Each row is Kubernetes' answer: a value,
or REFUSED where its checker does not compile the expression. tests/oracle/test_cel_answers.py checks the rows
themselves against the oracle."""

from __future__ import annotations

import pytest

from webhook.cel import CelCompiler, CelError

REFUSED = object()
ANSWERS = [
    # homogeneous aggregate literals: one type per list, per map's keys and values (`dyn` a type of its own)
    ("[1, 'a']", REFUSED),
    ("{1: 'a', true: 'b'}", REFUSED),          # was {1: 'b'}: the keys 1 and true collapsed into one
    ("[object.metadata.name, 'x']", REFUSED),
    ("{'a': [1, 2.0]}", REFUSED),
    ("[[1], []]", [[1], []]),
    ("[1, size('ab')]", [1, 2]),
    ("'%d %s'.format([1, 'A'])", "1 A"),       # the format function's arguments are exempt
    # typed list and set functions
    ("sets.contains(['a'], [1])", REFUSED),
    ("['a', 'b'].indexOf(1)", REFUSED),
    # past the end of a string: -1, not an error
    ("'abc'.indexOf('c', 5)", -1),
    ("'abc'.lastIndexOf('a', 10)", -1),
    ("''.lastIndexOf('a')", -1),
    # the quantity library's sign is a global function
    ("sign(quantity('-3'))", -1),
    ("quantity('-3').sign()", REFUSED),
    # strings extension v2: no reverse(); string() only of IPs and CIDRs
    ("'abc'.reverse()", REFUSED),
    ("string(ip('10.0.0.1'))", "10.0.0.1"),
    # compile-time checks of constant arguments
    ("'%s %s'.format(['a'])", REFUSED),
    ("'100%%'.format([null])", REFUSED),
    ("'a'.matches('(')", REFUSED),
    ("type('x') == string", True),
    ("type(string(1)) == string", True),
]
OBJECT = {"metadata": {"name": "web"}}


def answer(compiler: CelCompiler, expression: str, env: str = "admission") -> object:
    try:
        program = compiler.compile(expression, env)
    except CelError:
        return REFUSED
    try:
        return program.evaluate({"object": OBJECT})
    except CelError as exc:
        return f"runtime error: {exc}"


@pytest.mark.parametrize("expression, expected", ANSWERS)
def test_our_answer_is_kubernetes_answer(compiler, expression, expected):
    assert answer(compiler, expression) == expected


def test_jsonpatch_is_declared_only_where_mutations_compile(compiler):
    assert answer(compiler, "jsonpatch.escapeKey('a/b')") is REFUSED
    assert answer(compiler, "jsonpatch.escapeKey('a/b')", "mutating") == "a~1b"
