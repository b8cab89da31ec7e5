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


@pytest.mark.parametrize("text,expected", [
    ("1 in (object.a)", True),
    ("1 in ((object.a)).map(e, e * 2)", False),  # a range the C++ runtime's rewrite guards: `in` is no call
    ("4 in (object.a).filter(x, x > 1).map(x, x * 2)", True),
    ("'k' in ({'k': 1}) && 2 in ([2])", True),
    ("3 in [dyn(1), object.a[1]].map(e, e + 1)", True),  # nor is `in [` an index
])
def test_the_operand_after_in_is_neither_called_nor_indexed(compiler, text, expected):
    assert compiler.compile(text, env="admission").evaluate({"object": {"a": [1, 2]}}) is expected


# --- canonical: the key under which the fused programs share a binding (webhook.families.cel.fusedgroup) ---

def _canonical(text: str) -> str:
    from webhook.cel.source import canonical

    return canonical(tokenize(text))


@pytest.mark.parametrize("texts", [
    ["(object.a + (object.?b.orValue([])) + (object.?c.orValue([])))",
     "((object.a + object.?b.orValue([]) + object.?c.orValue([])))",
     "object.a + \n object.?b.orValue([]) + // the rest\n object.?c.orValue([])"],
    ["x in (y)", "x in y", "(x in y)"],
    ["(a).?b[?0]", "a.?b[?0]", "((a)).?b[?(0)]"],
    ["f((a), [(b)])", "f(a, [b])"],
    ["c ? (a) : (b)", "c ? a : b"],
])
def test_texts_that_differ_in_parentheses_around_operands_only_have_one_canonical_form(texts):
    assert len({_canonical(text) for text in texts}) == 1


@pytest.mark.parametrize("first,second", [
    ("(a + b) * c", "a + b * c"),
    ("(!a).b", "!a.b"),
    ("(-x).y", "-x.y"),
    ("-(1)", "-1"),  # one literal against a negation: kept apart
    ("(a ? b : c).d", "a ? b : c.d"),
    ("a - (b - c)", "a - b - c"),
    ("f(a, b)", "f((a, b))"),
])
def test_parentheses_that_change_the_expression_are_kept(first, second):
    assert _canonical(first) != _canonical(second)


# fields of `object` (dyn) mostly: most random combinations type-check
_LEAVES = ["object.a", "object.b", "object.?c.orValue(1)", "object.d[0]", "object.e", "1", "2", "true",
           "[1, object.a]", "{'k': object.a}", "object.b.all(x, x > 0)"]


# each shape of expression, from a random source and a maker of random operands
_SHAPES = [
    lambda rng, sub: f"{sub()} {rng.choice(['+', '-', '*', '==', '!=', '<', '&&', '||'])} {sub()}",
    lambda rng, sub: rng.choice(["!", "-"]) + sub(),
    lambda rng, sub: f"{sub()} ? {sub()} : {sub()}",
    lambda rng, sub: f"{sub()}{rng.choice(['.', '.?'])}{rng.choice(['x', 'y'])}",
    lambda rng, sub: f"{sub()}[{rng.choice(['', '?'])}{sub()}]",
    lambda rng, sub: f"{rng.choice(['size', 'string', 'dyn'])}({sub()})",
    lambda rng, sub: f"{sub()}.{rng.choice(['all', 'exists', 'map'])}(e, {sub()})",
    lambda rng, sub: f"{sub()} in {sub()}",
    lambda rng, sub: f"[{sub()}, {sub()}]",
]


def random_expression(rng, depth: int, leaves=_LEAVES, shapes=_SHAPES, parenthesise: bool = True) -> str:
    """Random CEL of `shapes` over `leaves`; with `parenthesise`, each subexpression parenthesised, or not, or
    twice, at random (a text whose tree the parser decides, whichever it is)."""
    def wrap(text: str) -> str:
        return _paren(rng, text) if parenthesise else text
    if depth == 0 or rng.random() < 0.2:
        return wrap(rng.choice(leaves))
    return wrap(rng.choice(shapes)(rng, lambda: random_expression(rng, depth - 1, leaves, shapes, parenthesise)))


def _paren(rng, text: str) -> str:
    count = rng.choice([0, 0, 1, 1, 2])
    return "(" * count + text + ")" * count


@pytest.mark.parametrize("seed", range(4))
def test_the_canonical_form_parses_to_the_tree_of_the_text(seed):
    """Whatever a text leaves out, it parses as the text does: texts with one canonical form are one expression."""
    import random

    from webhook.cel import CelCompiler

    cpp = CelCompiler("cel-expr-python")
    rng = random.Random(seed)
    compared = dropped = 0
    for _ in range(300):
        text = random_expression(rng, 3)
        canonical = _canonical(text)
        try:
            tree = cpp.compile(text, env="admission").tree()
        except CelError:
            with pytest.raises(CelError):  # what does not compile does not compile in either form
                cpp.compile(canonical, env="admission")
            continue
        assert tree is not None
        assert cpp.compile(canonical, env="admission").tree() == tree, (text, canonical)
        compared += 1
        dropped += canonical.count("(") < " ".join(t.text for t in tokenize(text)).count("(")
    assert compared > 60 and dropped > 30
