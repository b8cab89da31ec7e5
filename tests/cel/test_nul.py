"""NUL characters on the default runtime give the exact runtime's answers (webhook.cel.nul, backend_cpp).

cel-expr-python cuts strings and keys at a NUL where Python hands it values (tests/cel/test_runtime_nul.py);
the default compiler must still agree with the pure-Python reference, value for value and error for error,
whether the NUL comes in the activation (any depth, keys, variables), from one of our functions' results,
or from the program's own literals."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.cel.differential import activation, corpus_pods, corpus_policies, corpus_root
from tests.cel.test_differential import Tally, _variables, compare
from webhook.cel import Activation, CelCompiler, CelError
from webhook.cel.nul import contains_nul

CPP, PY = CelCompiler("cel-expr-python"), CelCompiler("cel-python")


def _outcome(compiler: CelCompiler, text: str, values: dict, shared: bool = False) -> tuple[str, object]:
    try:
        program = compiler.compile(text)
        return "value", program.evaluate(Activation(values) if shared else values)
    except CelError:
        return "error", None


def _agree(text: str, values: dict) -> None:
    expected = _outcome(PY, text, values)
    assert _outcome(CPP, text, values) == expected, text
    assert _outcome(CPP, text, values, shared=True) == expected, text


@pytest.mark.parametrize("text, obj, exact", [
    ("object.data.v == 'ok'", {"data": {"v": "ok\x00rm -rf"}}, False),
    ("object.data.v.contains('rm -rf')", {"data": {"v": "ok\x00rm -rf"}}, True),
    ("object.data.v", {"data": {"v": "ok\x00rm -rf"}}, "ok\x00rm -rf"),
    ("'team' in object.metadata.labels", {"metadata": {"labels": {"team\x00x": "a"}}}, False),
    ("object.metadata.labels", {"metadata": {"labels": {"team\x00x": "a", "team": "b"}}},
     {"team\x00x": "a", "team": "b"}),
    ("object.spec.x == 1", {"spec": {"x": 1}, "odd": {"": 1, "\x00": 2}}, True),
    ("object.l.exists(s, s.endsWith('-rf'))", {"l": ["x", "ok\x00rm -rf"]}, True),
    ("size(object.b)", {"b": b"ok\x00rm"}, 5),
])
def test_values_with_nul_read_exactly(text, obj, exact):
    for shared in (False, True):
        assert _outcome(CPP, text, {"object": obj}, shared) == ("value", exact)


@pytest.mark.parametrize("text", [
    "'ok\\x00rm'.upperAscii()", "'ok\\x00rm'.upperAscii() == 'OK'", "'x\\x00y'.replace('y', 'z')",
    "['a\\x00b'].join('-')", "'a\\x00b'.split('b')", "'%s!'.format(['a\\x00b'])", "'a\\x00b'.trim().size()",
    "object.s.lowerAscii() == 'ok'", "'ok\\u0000rm'.substring(1)", "'ok\\000rm'.upperAscii()",
    "string(b'ok\\000rm').upperAscii()", "'ok\x00rm'.upperAscii()", "size('ok\x00rm')", "'ok\x00rm' == 'ok'",
    "{'a\\x00b': 1, 'a': 2}", "['a\\x00b', 'a'].sort()",
])
def test_nul_made_by_the_program_or_our_functions_reads_exactly(text):
    _agree(text, {"object": {"s": "OK\x00RM"}})


def test_nul_in_string_values_reads_exactly_with_every_feature_of_the_default_runtime():
    """Optionals, cel.bind: cel-python has neither; NULs in string values are read whole on the default runtime."""
    program = CPP.compile("object.data.?v.orValue('') == 'ok'")
    assert program.evaluate({"object": {"data": {"v": "ok"}}}) is True
    assert program.evaluate({"object": {"data": {"v": "ok\x00rm -rf"}}}) is False
    assert CPP.compile("cel.bind(v, object.data.v, v + '!')", env="kyverno").evaluate(
        {"object": {"data": {"v": "ok\x00rm"}}}) == "ok\x00rm!"
    assert CPP.compile("object.l.map(s, s.split('\\x00')[1]).join(',')").evaluate(
        {"object": {"l": ["a\x00b", "c\x00d"]}}) == "b,d"
    # but one of our functions returning a string with a NUL needs the exact runtime, which has no optionals
    with pytest.raises(CelError, match="NUL"):
        CPP.compile("object.?l.orValue([]).join('|')").evaluate({"object": {"l": ["a\x00b", "c"]}})
    assert CPP.compile("object.l.join('|')").evaluate({"object": {"l": ["a\x00b", "c"]}}) == "a\x00b|c"
    # values built inside the runtime are exact there
    assert CPP.compile("string(base64.decode('b2sAcm0=')).contains('rm')").evaluate({"object": {}}) is True


def test_a_nul_key_in_an_expression_the_exact_runtime_cannot_run_is_an_error_not_a_cut_value():
    program = CPP.compile("object.metadata.?labels.orValue({}).exists(k, k == 'team')")
    assert program.evaluate({"object": {"metadata": {"labels": {"team": "a"}}}}) is True
    with pytest.raises(CelError, match="NUL"):
        program.evaluate({"object": {"metadata": {"labels": {"team\x00x": "a"}}}})
    with pytest.raises(CelError, match="NUL"):
        program.evaluate({"object": {"metadata": {"labels": {"x": "a"}}, "b": b"\x00"}})


def test_the_strict_path_reads_nul_values_and_refuses_the_rest_so_its_callers_take_the_exact_one():
    strict = CPP.compile_bound("object.data.v == 'ok'", [], strict=True)
    assert strict is not None
    assert strict.evaluate_strict(Activation({"object": {"data": {"v": "ok"}}})) is True
    assert strict.evaluate_strict(Activation({"object": {"data": {"v": "ok\x00rm"}}})) is False  # wrapped
    with pytest.raises(CelError):
        strict.evaluate_strict(Activation({"object": {"data": {"v": "ok"}, "keys": {"ok\x00": 1}}}))
    with pytest.raises(CelError):  # a NUL one of our functions returned
        CPP.compile_bound("object.s.upperAscii() == 'OK'", [], strict=True).evaluate_strict(
            Activation({"object": {"s": "ok\x00rm"}}))
    # a folded program (cel.bind): exact on NUL values, refused on a NUL key (callers then evaluate the
    # variables one by one, each on the exact runtime)
    bound = CPP.compile_bound("variables.v == 'ok'", [("v", "object.data.v")])
    assert bound is not None
    assert bound.evaluate(Activation({"object": {"data": {"v": "ok\x00rm"}}})) is False
    with pytest.raises(CelError, match="NUL"):
        bound.evaluate(Activation({"object": {"data": {"v": "ok"}, "keys": {"\x00": 1}}}))


def test_detection_sees_every_place_a_nul_can_hide():
    assert not contains_nul({"a": ["b", {"c": 1.5, "d": None, "e": True}], "f": b"x", "g": "\\u0000 as text"})
    for value in ({"a": "x\x00"}, {"a\x00": 1}, [[{"k": ["\x00"]}]], {"b": b"\x00"}, {1: "\x00"},
                  {"deep": 2**70, "s": "\x00"}, ("\x00",), {"a": {"@cel": "quantity", "text": "1\x00"}}):
        assert contains_nul(value), value


_TEXT = st.text(st.sampled_from("ab\x00-/. "), max_size=6)
_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | _TEXT,
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
                       max_leaves=10)
_READS = ["object", "object.v", "size(object.v)", "object.v == 'a'", "object.v == 'a\\x00b'",
          "type(object.v) == map && 'a' in object.v", "type(object.v) == string && object.v.startsWith('a')",
          "type(object.v) == string && object.v.contains('b')",
          "type(object.v) == string && object.v in ['a', 'b', 'a\\x00b']",
          "type(object.v) == string ? object.v.upperAscii() : ''",
          "type(object.v) == string ? variables.x + object.v : ''",
          "type(object.v) == map ? object.v.all(k, k.size() < 3) : true", "[object.v, variables.x]",
          "type(object.v) == string ? object.v.split('-') : []", "type(object.v) == string ? object.v.indexOf('b') : 0",
          "type(object.v) == string ? '%s/%s'.format([object.v, variables.x]) : ''",
          "type(object.v) == list ? object.v.filter(x, type(x) == string).map(x, x.lowerAscii() == 'a') : []",
          "type(object.v) == map ? object.v.filter(k, type(object.v[k]) == string && object.v[k].endsWith('b')) : []"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_VALUES, variable=_TEXT, text=st.sampled_from(_READS))
def test_any_value_with_nul_reads_as_on_the_exact_runtime(value, variable, text):
    values = {"object": {"v": value}, "variables": {"x": variable}}
    # where the runtimes differ with the NULs replaced, they differ on something else (size(null), ...)
    assume(_outcome(CPP, text, _without_nul(values)) == _outcome(PY, text, _without_nul(values)))
    _agree(text, values)


def _without_nul(value):
    if isinstance(value, str):
        return value.replace("\0", "~")
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    return value


def _plant(obj: dict) -> list[dict]:
    """The resource with a NUL planted where Kubernetes allows one (an annotation value, env values) and in a
    label key (refused by Kubernetes' validation, but a policy must not be misled if one gets through)."""
    variants = []
    meta = obj.get("metadata") or {}
    variants.append({**obj, "metadata": {**meta, "annotations": {**(meta.get("annotations") or {}),
                                                                 "note": "ok\x00rm -rf"}}})
    variants.append({**obj, "metadata": {**meta, "labels": {**(meta.get("labels") or {}), "team\x00x": "a"}}})
    spec = obj.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("containers"), list):
        containers = [{**c, "env": [*(c.get("env") or []), {"name": "CMD", "value": "ok\x00rm -rf"}],
                       "image": f"{c.get('image', 'x')}\x00:latest"} for c in spec["containers"] if isinstance(c, dict)]
        variants.append({**obj, "spec": {**spec, "containers": containers}})
    return variants


def test_corpus_expressions_agree_with_a_nul_planted():
    root = corpus_root()
    if root is None:
        pytest.skip("the shared conformance corpus is not on this machine")
    tally = Tally()
    pods = corpus_pods(root)
    for policy in corpus_policies(root):
        for obj in [v for o in policy.resources[:2] + pods[:1] for v in _plant(o)]:
            act = activation(obj)
            assert contains_nul(act)
            act["variables"] = _variables(policy.variables, policy.env, act)
            for expression in dict.fromkeys([e for _, e in policy.variables] + policy.expressions):
                compare(tally, policy.env, expression, [act])
    print(f"\ncorpus with NUL: {len(tally.unique)} distinct expressions, {tally.evaluations} evaluations, "
          f"{len(tally.mismatches)} mismatches")
    assert not tally.mismatches, "\n".join(tally.mismatches[:20])
    assert len(tally.unique) > 200
