"""cel-expr-python 0.1.3 cuts strings and map keys at their first NUL (docs/cel.md, Known gaps). This pins that
behaviour: once a release reads NUL exactly, these fail, and docs/cel.md and the trim tests' key strategy
(tests/cel_family/test_trim.py) can drop their caveat. The pure-Python runtime reads them exactly."""

import pytest

from webhook.cel import Activation, CelCompiler, CelError

CPP = CelCompiler(backend="cel-expr-python")
EXACT = CelCompiler(backend="cel-python")


def _value(compiler, text, obj):
    try:
        return compiler.compile(text).evaluate(Activation({"object": obj}))
    except CelError:
        return "error"


@pytest.mark.parametrize("text, obj, cut, exact", [
    ("object.data.v == 'ok'", {"data": {"v": "ok\x00rm -rf"}}, True, False),
    ("object.data.v.contains('rm')", {"data": {"v": "ok\x00rm -rf"}}, False, True),
    ("'team' in object.metadata.labels", {"metadata": {"labels": {"team\x00x": "a"}}}, True, False),
    ("object.spec.x == 1", {"spec": {"x": 1}, "odd": {"": 1, "\x00": 2}}, "error", True),
])
def test_the_cpp_runtime_cuts_at_nul_and_the_exact_one_does_not(text, obj, cut, exact):
    assert _value(CPP, text, obj) == cut
    assert _value(EXACT, text, obj) == exact
