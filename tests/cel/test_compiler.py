import pytest

from webhook.cel import CelCompiler, CelError
from webhook.cel.compiler import MAX_EXPRESSION_LENGTH


def test_compile_once_and_evaluate():
    cel = CelCompiler()
    program = cel.compile("object.metadata.labels.exists(k, k == 'team') && size(object.spec.containers) == 2")
    assert cel.compile(program.expression) is program
    obj = {"metadata": {"labels": {"team": "a"}}, "spec": {"containers": [{}, {}]}}
    assert program({"object": obj}) is True
    assert program({"object": {**obj, "spec": {"containers": []}}}) is False


def test_results_come_back_as_plain_python():
    cel = CelCompiler()
    assert cel.compile("{'a': [dyn(1), dyn(2.5), dyn('x'), dyn(true), dyn(null)]}").evaluate({}) == {"a": [1, 2.5, "x", True, None]}
    assert cel.compile("object.spec.containers.map(c, c.name)").evaluate(
        {"object": {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}}) == ["a", "b"]


def test_syntax_error_is_reported():
    with pytest.raises(CelError, match="does not compile"):
        CelCompiler().compile("object.(")


def test_evaluation_error_and_non_bool():
    cel = CelCompiler()
    with pytest.raises(CelError):
        cel.compile("object.missing.deeper == 1")({"object": {}})
    with pytest.raises(CelError, match="must evaluate to a bool"):
        cel.compile("1 + 1")({})


def test_cost_guard():
    cel = CelCompiler()
    with pytest.raises(CelError, match="longer than"):
        cel.compile("true && " * (MAX_EXPRESSION_LENGTH // 8 + 1) + "true")
    nested = "object.a.all(x, object.a.all(y, object.a.all(z, object.a.all(w, true))))"
    with pytest.raises(CelError, match="nests more than"):
        cel.compile(nested)
    assert cel.compile("object.a.all(x, object.a.all(y, object.a.exists(z, true)))")({"object": {"a": [1]}}) is True


def test_cache_is_per_environment_and_bounded(monkeypatch):
    from webhook.cel import compiler as module
    cel = CelCompiler()
    assert cel.compile("true", env="admission") is not cel.compile("true", env="kyverno")
    assert CelCompiler().compile("true", env="kyverno") is cel.compile("true", env="kyverno")  # one cache per process
    monkeypatch.setattr(module, "MAX_CACHED", 3)
    before = len(module._cache)
    for i in range(10):
        cel.compile(f"{i} == {i}")
    assert len(module._cache) <= max(before, 3)  # full: each new program replaces the oldest
    assert cel.compile("9 == 9")({}) is True


@pytest.mark.parametrize("text", ["object.b[-1]", "[1, 2][-3]", "object.b[2]"])
def test_a_list_index_out_of_range_is_an_error_negative_ones_too(compiler, text):
    """CEL has no indexing from the end: the reference runtime read `[-1]` as Python does (the last element)."""
    with pytest.raises(CelError, match="(?i)index"):
        compiler.compile(text, env="admission").evaluate({"object": {"b": [1, 2]}})


def test_values_for_the_api_server_are_json_as_cel_go_writes_it():
    """What a mutation patches in and a policy generates (webhook.cel.values.json_value): durations, bytes and
    timestamps as cel-go converts them; a CEL type or a NaN is an error naming where it is."""
    import math

    from webhook.cel.values import json_value

    value = CelCompiler("cel-expr-python").compile(
        "{'wait': dyn(duration('1m30s')), 'raw': dyn(b'hi'), 'at': dyn([timestamp('2026-01-02T03:04:05Z')]), 'n': dyn(1)}").evaluate({})
    assert json_value(value) == {"wait": "90s", "raw": "aGk=", "at": ["2026-01-02T03:04:05Z"], "n": 1}
    with pytest.raises(ValueError, match=r"the value.k\[1\] is a .* value, which JSON cannot hold"):
        json_value(CelCompiler("cel-expr-python").compile("{'k': [dyn(1), dyn(type(1))]}").evaluate({}))
    with pytest.raises(ValueError, match="nan, which JSON cannot hold"):
        json_value({"k": math.nan})


def test_a_generated_object_is_json_as_cel_go_writes_it():
    import datetime

    from webhook.cel.functions import CURRENT, CelCallContext
    from webhook.cel.lib_kyverno import generate

    context = CelCallContext(generated=[])
    token = CURRENT.set(context)
    try:
        generate("apps", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                           "data": {"ttl": datetime.timedelta(seconds=90)}}])
    finally:
        CURRENT.reset(token)
    assert context.generated == [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "apps"},
                                  "data": {"ttl": "90s"}}]
