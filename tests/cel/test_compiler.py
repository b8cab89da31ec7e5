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
    assert cel.compile("{'a': [1, 2.5, 'x', true, null]}").evaluate({}) == {"a": [1, 2.5, "x", True, None]}
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
