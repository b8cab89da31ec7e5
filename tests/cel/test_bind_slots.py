"""cel.bind as Quartermaster generates it (variables folded around an expression, webhook.cel.inline; the
fused programs of webhook.families.cel.fused) gives the value of the same expression with the variables
written out, on the default runtime.

The generated shape is always `cel.bind(a, A, cel.bind(b, B, ... BODY))`: binds around everything, their
values and the body free to use comprehensions and earlier variables. cel-expr-python initialises a bind
lazily and misreads it when a comprehension at the same nesting level ran before it (docs/cel.md), a
shape the generator never produces; random programs of the generated shape are checked here against the
pure-Python reference runtime evaluating the same program with every variable written out in place."""

from __future__ import annotations

import random
import re

import pytest

from webhook.cel import CelCompiler

CPP, REFERENCE = CelCompiler("cel-expr-python"), CelCompiler("cel-python")
OBJECT = {"a": [[1, 2], [3]], "b": [[4], [5, 6, 7]], "c": [1, 2, 3], "d": [[8, 9]]}
RANGES = ["object.a", "object.b", "object.c", "object.d"]


def _comprehension(rng: random.Random, names: list[str]) -> str:
    over = rng.choice(names) if names and rng.random() < 0.4 else rng.choice(RANGES)
    var = rng.choice("xyz")
    return rng.choice([f"{over}.map({var}, [{var}])", f"{over}.filter({var}, true)", f"{over}.exists({var}, true)",
                       f"{over}.all({var}, true)", f"{over}.exists_one({var}, true)"])


def _list(rng: random.Random, names: list[str]) -> str:
    parts = []
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.5:
            parts.append(_comprehension(rng, names))
        if names:
            parts.append(rng.choice(names))
    # each element dyn: Kubernetes' checker takes list literals of one type only (webhook.cel.literal_types)
    return "[" + ", ".join(f"dyn({p})" for p in parts or ["0"]) + "]"


def _program(rng: random.Random) -> tuple[str, str]:
    """(the program with binds around it, the same with every variable written out)."""
    values: list[tuple[str, str]] = []
    for i in range(rng.randint(1, 3)):
        values.append((f"v{i}", _list(rng, [n for n, _ in values])))
    body = _list(rng, [n for n, _ in values])
    bound = body
    for name, value in reversed(values):
        bound = f"cel.bind({name}, {value}, {bound})"
    written = body
    for _ in values:  # values may name earlier variables: write out until none is left
        for name, value in values:
            written = re.sub(rf"\b{name}\b", f"({value})", written)
    return bound, written


@pytest.mark.parametrize("seed", range(4))
def test_binds_around_the_expression_give_the_written_out_value(seed):
    rng = random.Random(seed)
    compared = 0
    for _ in range(60):
        bound, written = _program(rng)
        try:
            expected = REFERENCE.compile(written, env="admission").evaluate({"object": OBJECT})
        except Exception:
            continue
        assert CPP.compile(bound, env="kyverno").evaluate({"object": OBJECT}) == expected, bound
        compared += 1
    assert compared > 40


def test_a_bind_after_a_comprehension_at_the_same_level_is_misread():
    """The shape the generator avoids. When this fails, the runtime was fixed (docs/cel.md can say so)."""
    misread = CPP.compile("object.a.exists(x, true) ? cel.bind(v, object.c, v.size()) : 0", env="kyverno")
    assert misread.evaluate({"object": OBJECT}) != 3
    around = CPP.compile("cel.bind(v, object.c, object.a.exists(x, true) ? v.size() : 0)", env="kyverno")
    assert around.evaluate({"object": OBJECT}) == 3


# The joined shape (webhook.families.cel.fusedgroup): several members, each with its own variables hoisted
# to the top (renamed, identical ones shared) around the list of the members' bodies. Built by the real
# joined_text from members as the fused programs hold them (bound names `qm__v_<name>`); the reference
# evaluates `[body0, body1, ...]` with each member's variables written out in its own body.

def _loop_reading(rng: random.Random, names: list[str]) -> str:
    """A comprehension whose body reads a variable: its lazy binding may first be computed inside a loop."""
    over, var, name = rng.choice(RANGES), rng.choice("xyz"), rng.choice(names)
    return rng.choice([f"{over}.map({var}, [dyn({var}), dyn({name})])", f"{over}.exists({var}, {name}.size() > 1)",
                       f"{over}.filter({var}, {name}.size() > 0)", f"{over}.all({var}, {name} != [])"])


def _member(rng: random.Random, shared: list[str]) -> tuple[list[tuple[str, str]], str]:
    """(bound (name, value) in order, body), with the generated names."""
    from webhook.cel.inline import PREFIX

    values: list[tuple[str, str]] = []
    for i in range(rng.randint(0, 3)):
        names = [n for n, _ in values]
        value = rng.choice(shared) if shared and rng.random() < 0.3 else _list(rng, names)
        values.append((f"{PREFIX}v{i}", value))
    names = [n for n, _ in values]
    parts = [_list(rng, names)]
    if names and rng.random() < 0.6:
        parts.insert(rng.randint(0, 1), _loop_reading(rng, names))
    return values, "[" + ", ".join(f"dyn({p})" for p in parts) + "]"


def _written(values: list[tuple[str, str]], body: str) -> str:
    for _ in values:
        for name, value in values:
            body = re.sub(rf"\b{name}\b", f"({value})", body)
    return body


def _joined(rng: random.Random) -> tuple[str, str, int]:
    from webhook.families.cel import fused, fusedgroup

    shared = [_list(rng, []) for _ in range(2)]  # values several members define alike: bound once
    members = [_member(rng, shared) for _ in range(rng.randint(2, 5))]
    programs = [fused.Fused(body, tuple(values), "admission", {}, CPP) for values, body in members]
    joined = fusedgroup.joined_text(programs)
    assert joined.rfind("cel.bind") < joined.index("[(\n")  # every bind encloses the list of bodies
    return joined, "[" + ", ".join(_written(values, body) for values, body in members) + "]", len(members)


@pytest.mark.parametrize("seed", range(6))
def test_joined_members_with_hoisted_binds_give_each_members_written_out_value(seed):
    rng = random.Random(1000 + seed)
    compared = 0
    for _ in range(50):
        joined, written, count = _joined(rng)
        try:
            expected = REFERENCE.compile(written, env="admission").evaluate({"object": OBJECT})
        except Exception:
            continue
        program = CPP.compile_bound(joined, [], "admission")
        assert program is not None, joined
        assert program.evaluate({"object": OBJECT}) == expected, joined
        compared += 1
    assert compared > 30


def test_members_side_by_side_were_misread_and_hoisted_are_not():
    """The removed shape (each member's own program as a list element: a bind after the comprehension of
    the member before it) against the hoisted one, on the same two members."""
    from webhook.families.cel import fused, fusedgroup
    from webhook.cel.inline import PREFIX

    first = fused.Fused("object.a.exists(x, true) ? 1 : 0", (), "admission", {}, CPP)
    second = fused.Fused(f"{PREFIX}v.size()", ((f"{PREFIX}v", "object.c"), ), "admission", {}, CPP)
    side_by_side = CPP.compile_bound(f"[{first.source}, {second.source}]", [], "admission")
    assert side_by_side.evaluate({"object": OBJECT}) != [1, 3]
    hoisted = CPP.compile_bound(fusedgroup.joined_text([first, second]), [], "admission")
    assert hoisted.evaluate({"object": OBJECT}) == [1, 3]


def test_values_written_with_other_parentheses_share_one_binding():
    """Three members concatenating the same lists, each parenthesised its own way: bound once, each member's
    value as before."""
    from webhook.cel.inline import PREFIX
    from webhook.families.cel import fused, fusedgroup

    spellings = ["(object.a + (object.?b.orValue([])) + (object.?x.orValue([])))",
                 "((object.a + object.?b.orValue([]) + object.?x.orValue([])))",
                 "object.a +\n  object.?b.orValue([]) + // the rest\n  object.?x.orValue([])"]
    members = [fused.Fused(f"{PREFIX}all.size() + {i}", ((f"{PREFIX}all", value),), "admission", {}, CPP)
               for i, value in enumerate(spellings)]
    joined = fusedgroup.joined_text(members)
    assert joined.count("cel.bind(") == 1, joined
    assert CPP.compile_bound(joined, [], "admission").evaluate({"object": OBJECT}) == [4, 5, 6]
    # an expression of other precedence is another value: bound apart
    other = fused.Fused(f"{PREFIX}all.size()", ((f"{PREFIX}all", "object.c + object.a[0] + [9]"),), "admission", {}, CPP)
    regrouped = fused.Fused(f"{PREFIX}all.size()", ((f"{PREFIX}all", "object.c + (object.a[0] + [9])"),), "admission",
                            {}, CPP)
    assert fusedgroup.joined_text([other, regrouped]).count("cel.bind(") == 2
