"""{{ }} substitution and Kyverno's JMESPath functions."""

import threading

import pytest

from tests.work import lines_run
from webhook.families.kyverno.jmespath_functions import JMESPathError, NotFound, query
from webhook.families.kyverno.variables import JsonContext, SubstitutionError, substitute_all

CTX = JsonContext({"request": {"operation": "CREATE", "object": {"metadata": {"name": "web", "labels": {"app": "a"}},
                                                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
                           "oldObject": {"metadata": {"name": "old"}}},
               "key": "app", "element": {"name": "c"}})


def test_whole_string_variable_keeps_its_type_and_embedded_ones_render():
    out = substitute_all({"labels": "{{request.object.metadata.labels}}", "msg": "pod {{request.object.metadata.name}}",
                          "list": "x={{request.object.metadata.labels}}"}, CTX)
    assert out == {"labels": {"app": "a"}, "msg": "pod web", "list": 'x={"app":"a"}'}


def test_nested_and_escaped_variables():
    out = substitute_all(["{{request.object.metadata.labels.{{key}}}}", "\\{{request.operation}}"], CTX)
    assert out == ["a", "{{request.operation}}"]


def test_keys_are_substituted_and_delete_reads_the_old_object():
    assert substitute_all({"{{element.name}}": 1}, CTX) == {"c": 1}
    deleting = JsonContext(CTX.data, delete=True)
    assert substitute_all("{{request.object.metadata.name}}", deleting) == "old"


def test_unresolvable_variable_names_the_path():
    with pytest.raises(SubstitutionError, match="request.object.metadata.namespace"):
        substitute_all({"a": "{{request.object.metadata.namespace}}"}, CTX)


@pytest.mark.parametrize("expression,expected", [
    ("to_upper('ab')", "AB"), ("split('a,b', ',')", ["a", "b"]), ("regex_replace_all('(a)b', 'xab', '$1-')", "xa-"),
    ("regex_match('^n.*', 'nginx')", True), ("pattern_match('ng*', 'nginx')", True), ("add(`1`, `2`)", 3),
    ("add('1Gi', '512Mi')", "1536Mi"), ("divide('1Gi', '512Mi')", 2.0), ("multiply('2', `3`)", "6"),
    ("subtract('1h', '30m0s')", "30m0s"), ("base64_decode(base64_encode('hi'))", "hi"),
    ("truncate('abcdef', `3`)", "abc"), ("semver_compare('1.2.3', '>=1.0.0 <2.0.0')", True),
    ("parse_json('{\"a\": 1}').a", 1), ("parse_yaml('a: [1]').a[0]", 1), ("path_canonicalize('/a/../b//c')", "/b/c"),
    ("label_match(`{\"a\":\"1\"}`, `{\"a\":\"1\",\"b\":\"2\"}`)", True), ("equal_fold('AB', 'ab')", True),
    ("items(`{\"b\":1,\"a\":2}`, 'k', 'v')[0].k", "a"), ("object_from_lists(['a'], [`1`])", {"a": 1}),
    ("trim_prefix('nginx:1', 'nginx:')", "1"), ("lookup(`{\"a\":1}`, 'a')", 1), ("compare('a', 'b')", -1),
    ("sum([`1`, `2`])", 3), ("time_diff('2020-01-01T00:00:00Z', '2020-01-01T01:30:00Z')", "1h30m0s"),
    ("time_before('2020-01-01T00:00:00Z', '2021-01-01T00:00:00Z')", True),
    ("time_add('2020-01-01T00:00:00Z', '1h')", "2020-01-01T01:00:00Z"),
])
def test_kyverno_functions(expression, expected):
    assert query(expression, {}) == expected


def test_missing_key_on_the_path_is_an_error_but_not_inside_functions_or_projections():
    data = {"items": [{"resources": {"limits": 1}}, {"name": "x"}]}
    with pytest.raises(NotFound):
        query("items[0].requests", data)
    assert query("items[].resources.keys(@)[]", data) == ["limits"]
    assert query("items[0].requests || 'none'", data) == "none"


def test_function_errors_raise():
    with pytest.raises(JMESPathError):
        query("divide(`1`, `0`)", {})


def _annotated(value: str) -> JsonContext:
    return JsonContext({"request": {"object": {"metadata": {"annotations": {"a": value}}}}})


SELF = "{{request.object.metadata.annotations.a}}"


@pytest.mark.parametrize("value", [SELF, SELF * 2, "x" * 1000 + SELF * 8])
def test_a_value_that_holds_variables_again_is_an_error_not_a_loop(value):
    """An annotation naming itself looped for ever on the event loop; naming itself twice doubled the string at
    each pass (the request decides, any policy that renders the annotation inside a longer string is enough)."""
    outcome: list = []
    lines: list = []

    def substitute() -> None:
        try:
            outcome.append(substitute_all({"m": "note: " + SELF}, _annotated(value)))
        except SubstitutionError as exc:
            outcome.append(exc)

    # a thread, so that a loop that never ends fails at the hang guard instead of holding the run
    worker = threading.Thread(target=lambda: lines.append(lines_run(substitute)), daemon=True)
    worker.start()
    worker.join(30)
    assert outcome and lines, "substitution did not end"
    assert isinstance(outcome[0], SubstitutionError) and "holds variables again" in str(outcome[0])
    assert lines[0] < 5_000, lines  # one pass over the value (about 1,000 lines), not one per doubling


def test_substitution_that_would_build_a_huge_string_is_an_error():
    big = JsonContext({"request": {"object": {"metadata": {"annotations": {"a": "x" * (1 << 20)}}}}})
    with pytest.raises(SubstitutionError, match="more than"):
        substitute_all("{{request.object.metadata.annotations.a}}-" * 10, big)
    one = substitute_all("<{{request.object.metadata.annotations.a}}>", big)
    assert len(one) == (1 << 20) + 2


def test_variables_a_value_brings_are_still_resolved_once_as_in_kyverno():
    ctx = JsonContext({"request": {"object": {"metadata": {"name": "web", "annotations": {
        "a": "{{request.object.metadata.name}}"}}}}})
    assert substitute_all("n={{request.object.metadata.annotations.a}}", ctx) == "n=web"
    assert substitute_all("{{request.object.metadata.labels.{{request.object.metadata.name}} || 'none'}}",
                          ctx) == "none"
