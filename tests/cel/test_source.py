"""The tokenizer-based rewrites never touch strings or comments, and keep nesting intact."""

import pytest

from webhook.cel import CelCompiler, CelError
from webhook.cel.source import (comprehension_depth, guard_accumulating_ranges, rewrite_constructions, tokenize,
                                variable_refs)


def rewrite(text: str) -> str:
    return rewrite_constructions(text, tokenize(text))


@pytest.mark.parametrize("text,expected", [
    ("Object{spec: 1}", "dyn({'spec': 1})"),
    ("Object.spec{containers: [Object.spec.containers{name: 'a'}]}", "dyn({'containers': [dyn({'name': 'a'})]})"),
    ("JSONPatch{op: 'add', ?value: optional.of(1)}", "dyn({'op': 'add', ?'value': optional.of(1)})"),
    ("{'a': x ? y : z}", "{'a': x ? y : z}"),
    ("'Object{a: 1}' + r'''JSONPatch{op: x}''' + b\"T{a: 1}\"", "'Object{a: 1}' + r'''JSONPatch{op: x}''' + b\"T{a: 1}\""),
    ("x in {'a': 1} // Object{a: 1}\n", "x in {'a': 1} // Object{a: 1}\n"),
    ("Object{spec: cond ? Object.spec{a: 1} : Object.spec{}}", "dyn({'spec': cond ? dyn({'a': 1}) : dyn({})})"),
])
def test_constructions(text, expected):
    assert rewrite(text) == expected


def test_variable_refs_ignore_strings_and_fields():
    refs, whole = variable_refs(tokenize("variables.a + 'variables.b' + object.variables.c + variables[\"d\"]"))
    assert refs == {"a", "d"} and not whole


def test_depth_counts_only_macro_calls():
    assert comprehension_depth(tokenize("a.map(x, f(b.filter(y, g(h(y)))))")) == 2
    assert comprehension_depth(tokenize("'a.map(x, b.map(y, c.map(z, d.map(w, 1))))'")) == 0


def test_range_guard_keeps_the_receiver_whole():
    text = "object.spec.?containers.orValue([])[0].ports.map(p, p.containerPort)"
    guarded = guard_accumulating_ranges(text, tokenize(text), 10, "tooLong")
    assert guarded.startswith("cel.bind(__qm_r0, object.spec.?containers.orValue([])[0].ports, size(__qm_r0) <= 10")


def test_unterminated_string_is_a_compile_error():
    with pytest.raises(CelError, match="does not compile"):
        CelCompiler().compile("object.name == 'abc")


def test_raw_and_triple_quoted_strings_evaluate(compiler):
    program = compiler.compile("r'\\d+' + '''a'b''' + \"\\u00e9\"", env="mutating")
    assert program.evaluate({}) == "\\d+a'bé"
