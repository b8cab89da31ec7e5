"""cel-expr-python 0.1.3, used raw, cuts strings, bytes and map keys at their first NUL where a Python value
enters it: an activation's values and the results of functions written in Python. Values built inside the
runtime keep theirs. This pins that behaviour, which webhook.cel.nul and backend_cpp work around (docs/cel.md,
Known gaps; tests/cel/test_nul.py checks the workaround). Once a release reads NUL exactly, these fail, and
the workaround and its part of docs/cel.md can go."""

import pytest

from cel_expr_python import cel
from cel_expr_python.ext import ext_encoders

T = cel.Type


def _upper(value):
    return value.upper()


ENV = cel.NewEnv(variables={"object": T.DYN}, extensions=[ext_encoders.ExtEncoders()], functions=[
    cel.FunctionDecl("qmUpper", [cel.Overload("qm_upper_string", T.STRING, [T.STRING], impl=_upper)])])


def _value(text, obj):
    value = ENV.compile(text).eval(data={"object": obj})
    return "error" if value.type() == T.ERROR else value.plain_value()


@pytest.mark.parametrize("text, obj, cut", [
    ("object.data.v == 'ok'", {"data": {"v": "ok\x00rm -rf"}}, True),
    ("object.data.v.contains('rm')", {"data": {"v": "ok\x00rm -rf"}}, False),
    ("object.b == b'ok'", {"b": b"ok\x00rm -rf"}, True),
    ("'team' in object.metadata.labels", {"metadata": {"labels": {"team\x00x": "a"}}}, True),
    ("object.spec.x == 1", {"spec": {"x": 1}, "odd": {"": 1, "\x00": 2}}, "error"),
    # a function written in Python returns a string with a NUL: cut too
    ("qmUpper('ok\\x00rm') == 'OK'", {}, True),
])
def test_the_raw_runtime_cuts_what_python_hands_it(text, obj, cut):
    assert _value(text, obj) == cut


@pytest.mark.parametrize("text, exact", [
    ("size('ok\\x00rm')", 5),
    ("'ok\\x00rm'", "ok\x00rm"),
    ("{'a\\x00b': 1, 'a': 2}", {"a\x00b": 1, "a": 2}),
    ("string(b'ok\\000rm') == 'ok'", False),
    ("size(base64.decode('b2sAcm0='))", 5),
    ("size('ok\x00rm')", 5),          # a NUL character in the source text itself
    ("qmUpper('ok\\x00rm').size()", 2),  # the argument arrives whole; the result is cut
])
def test_values_built_inside_the_runtime_keep_their_nul(text, exact):
    assert ENV.compile(text).eval(data={"object": {}}).plain_value() == exact
