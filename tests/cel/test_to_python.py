"""CEL compiled to Python (webhook.cel.to_python): wherever it gives a value, the runtime gives that very value.

Random expressions of the subset it compiles (and of what it must refuse) on random JSON objects, wrong types,
nulls, integers past int64 and strings with NUL among them: each value the Python form gives must be the
default runtime's value of the same expression (`CelProgram.evaluate`, the exact path), type for type; where
the runtime errs, the Python form must refuse. It may refuse more (the runtime then tells), but not much more
on ordinary objects: the comparisons count both.
"""

from __future__ import annotations

import math
import random

import pytest

from webhook.cel import CelCompiler, CelError, to_python
from webhook.cel.to_python import NOT_TOLD, Refused, compile_tree

CPP = CelCompiler("cel-expr-python")
ROOTS = frozenset({"object", "oldObject", "namespaceObject", "request", "exceptions"})
KEYS = ["a", "b", "c", "name", "spec"]
STRINGS = ["", "a", "ALL", "x\0y", "é", "NET_BIND_SERVICE", "b/a"]
INTS = [0, 1, -1, 2, 7, (1 << 63) - 1, -(1 << 63), 1 << 63, (1 << 64) - 1]


def _value(rng: random.Random, depth: int = 0) -> object:
    roll = rng.random()
    if depth < 3 and roll < 0.25:
        return {k: _value(rng, depth + 1) for k in rng.sample(KEYS, rng.randint(0, 4))}
    if depth < 3 and roll < 0.4:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return rng.choice([rng.choice(STRINGS), rng.choice(INTS), rng.choice([0.0, 1.0, -2.5, 1e300]),
                       rng.choice([True, False]), None])


def _object(rng: random.Random) -> dict:
    return {k: _value(rng, 1) for k in rng.sample(KEYS, rng.randint(1, 5))}


def _path(rng: random.Random, base: str = "object") -> str:
    return base + "".join("." + rng.choice(KEYS) for _ in range(rng.randint(0, 2)))


def _optional(rng: random.Random, base: str = "object") -> str:
    steps = "".join(rng.choice([".?", ".?", "."]) + rng.choice(KEYS) for _ in range(rng.randint(1, 3)))
    steps = ".?" + steps[2:] if steps.startswith(".") and not steps.startswith(".?") else steps
    if rng.random() < 0.2:
        steps += f"[?{rng.choice(['0', '1', rng.choice([repr(s) for s in KEYS])])}]"
    default = rng.choice(["''", "0", "false", "[]", "null", "1.0", _path(rng)])
    ending = rng.choice([f".orValue({default})", ".hasValue()", ".value()", f".orValue({default})"])
    return base + steps + ending


def _atom(rng: random.Random, names: list[str]) -> str:
    choices = [lambda: _path(rng), lambda: _optional(rng), lambda: repr(rng.choice(STRINGS[:3] + STRINGS[4:])),
               lambda: str(rng.choice([0, 1, -1, 2, 9223372036854775807])), lambda: rng.choice(["true", "false", "null"]),
               lambda: f"has({_path(rng)}.{rng.choice(KEYS)})", lambda: f"size({_path(rng)})",
               lambda: f"{_path(rng)}[{rng.choice(['0', '1', repr('a')])}]",
               lambda: "[" + ", ".join(repr(s) for s in rng.sample(STRINGS[:3], 2)) + "]"]
    if names:
        choices.append(lambda: rng.choice(names))
        choices.append(lambda: _optional(rng, rng.choice(names)))
    return rng.choice(choices)()


def _expr(rng: random.Random, depth: int, names: list[str]) -> str:
    if depth <= 0 or rng.random() < 0.25:
        return _atom(rng, names)
    a = lambda: _expr(rng, depth - 1, names)  # noqa: E731
    var = rng.choice("xyz")
    inner = names + [var]
    over = rng.choice([_path(rng), _optional(rng), "[1, 2, 3]", "['a', 'ALL']", "[]"] + names)
    body = lambda: _expr(rng, depth - 1, inner)  # noqa: E731
    return rng.choice([
        lambda: f"({a()} == {a()})", lambda: f"({a()} != {a()})", lambda: f"({a()} < {a()})",
        lambda: f"({a()} >= {a()})", lambda: f"({a()} && {a()})", lambda: f"({a()} || {a()})",
        lambda: f"!{a()}", lambda: f"({a()} ? {a()} : {a()})", lambda: f"({a()} + {a()})",
        lambda: f"({a()} - {a()})", lambda: f"({a()} * {a()})", lambda: f"-({a()})",
        lambda: f"({a()} in {a()})", lambda: f"({a()} in ['a', 'ALL', ''])", lambda: f"{a()}.size()",
        lambda: f"{a()}.contains({a()})", lambda: f"{a()}.startsWith({a()})", lambda: f"{a()}.endsWith({a()})",
        lambda: f"{over}.all({var}, {body()})", lambda: f"{over}.exists({var}, {body()})",
        lambda: f"{over}.exists_one({var}, {body()})", lambda: f"{over}.map({var}, {body()})",
        lambda: f"{over}.filter({var}, {body()})", lambda: f"[{a()}, {a()}]",
        lambda: f"cel.bind({var}, {a()}, {_expr(rng, depth - 1, inner)})",
    ])()


def typed(value: object) -> object:
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    if isinstance(value, dict):
        return ("map", sorted((k, typed(v)) for k, v in value.items()))
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, value)


def _check(expression: str, objects: list[dict], counts: dict[str, int]) -> None:
    try:
        program = CPP.compile(expression, env=("kyverno" if "cel.bind" in expression else "admission"))
    except CelError:
        counts["not CEL"] += 1
        return
    python = compile_tree(program.tree(), ROOTS)
    if python is None:
        counts["not compiled"] += 1
        return
    for obj in objects:
        try:
            told = python.evaluate({"object": obj})
        except Refused:
            counts["refused"] += 1
            continue
        try:
            expected = program.evaluate({"object": obj})
        except CelError as exc:
            pytest.fail(f"{expression} on {obj!r}: Python says {told!r}, the runtime errs ({exc})")
        assert typed(told) == typed(expected), (expression, obj, told, expected)
        counts["told"] += 1


@pytest.mark.parametrize("seed", range(6))
def test_every_value_the_python_form_gives_is_the_runtimes(seed):
    rng = random.Random(seed)
    objects = [_object(rng) for _ in range(12)]
    objects.append({"a": {"b": {"c": "x"}}, "spec": {"a": [1, 2], "name": "ALL"}, "name": "a"})
    counts = {"told": 0, "refused": 0, "not compiled": 0, "not CEL": 0}
    for _ in range(120):
        _check(_expr(rng, 3, []), objects, counts)
    print(counts)
    assert counts["told"] > 150 and counts["told"] > counts["refused"] // 2, counts


POD_SECURITY_LIKE = [
    "object.spec.containers.all(c, c.?securityContext.?privileged.orValue(false) == false)",
    "object.spec.containers.all(c, c.?securityContext.?capabilities.?drop.orValue([]).exists_one(x, x == 'ALL'))",
    "cel.bind(all, object.spec.containers + object.?spec.?initContainers.orValue([]), "
    "all.all(c, c.?ports.orValue([]).all(p, p.?hostPort.orValue(0) == 0)))",
    "object.?spec.?securityContext.?runAsUser.orValue(1) > 0",
    "!has(object.spec.volumes) || object.spec.volumes.all(v, has(v.configMap) || has(v.emptyDir))",
    "object.spec.containers.all(c, c.?securityContext.?seccompProfile.?type.orValue('RuntimeDefault') "
    "in ['RuntimeDefault', 'Localhost'])",
]
PODS = [
    {"spec": {"containers": [{"name": "a"}]}},
    {"spec": {"containers": [{"name": "a", "securityContext": {"privileged": True, "runAsUser": 0}}],
              "initContainers": [{"securityContext": {"capabilities": {"drop": ["ALL", "ALL"]}}}],
              "volumes": [{"emptyDir": {}}, {"hostPath": {"path": "/"}}]}},
    {"spec": {"containers": [{"ports": [{"hostPort": 80}, {}], "securityContext": {"privileged": "yes"}}],
              "securityContext": {"runAsUser": 1 << 63}}},
    {"spec": {"containers": [{"securityContext": {"seccompProfile": {"type": "Unconfined"}}}], "volumes": None}},
    {"spec": {"containers": "not a list"}},
    {"spec": {}},
]


@pytest.mark.parametrize("expression", POD_SECURITY_LIKE)
def test_pod_security_shapes_compile_and_agree(expression):
    counts = {"told": 0, "refused": 0, "not compiled": 0, "not CEL": 0}
    _check(expression, PODS, counts)
    assert counts["not compiled"] == 0 and counts["told"] >= 3, counts


@pytest.mark.parametrize("expression", [
    "object.a.matches('x')",            # RE2, not Python's re
    "1u == 1u",                         # uint
    "b'x' == b'x'",                     # bytes
    "{'a': 1}.a == 1",                  # map literals
    "int('1') == 1",                    # conversions
    "object.?a.orValue(object.?b)",     # an optional as a default
    "(true ? object.?a : object.?b).orValue(1)",
    "params.x == 1",                    # a variable it is not given
    "10 / 3 == 3",                      # division truncates in CEL
])
def test_what_it_does_not_model_is_not_compiled(expression):
    assert compile_tree(CPP.compile(expression, env="admission").tree(), ROOTS - {"params"}) is None


@pytest.mark.parametrize("expression, obj", [
    ("object.a + 1 > 0", {"a": (1 << 63) - 1}),           # overflow: an error in CEL
    ("object.a == 1", {"a": 1 << 63}),                     # beyond int64: the runtime's to read
    ("object.a == 1", {"a": 1.0}),                         # CEL's cross-type equality
    ("object.a == null", {"a": "x"}),
    ("object.a", {"b": 1}),                                # no such key
    ("object.a.b", {"a": [1]}),                            # a field of a list
    ("object.a.all(x, x)", {"a": {"k": True}}),            # a map's keys, in the runtime's order
    ("object.a && true", {"a": 1}),                        # not a bool
    ("object.a[-1] == 1", {"a": [1]}),
])
def test_what_cel_errs_on_or_it_does_not_model_is_refused(expression, obj):
    python = compile_tree(CPP.compile(expression, env="admission").tree(), ROOTS)
    assert python is not None
    with pytest.raises(Refused):
        python.evaluate({"object": obj})


def test_short_circuits_and_absorbed_errors_give_cels_value():
    python = compile_tree(CPP.compile("false && object.a.b || object.c == 1", env="admission").tree(), ROOTS)
    assert python.evaluate({"object": {"c": 1}}) is True  # `false && error` is false in CEL
    python = compile_tree(CPP.compile("object.a.exists(x, x == 1)", env="admission").tree(), ROOTS)
    assert python.evaluate({"object": {"a": [1, "b"]}}) is True  # found before the element it would refuse


def test_the_iteration_budget_bounds_an_evaluation():
    nested = "object.a.all(x, object.a.all(y, object.a.all(z, true)))"
    python = compile_tree(CPP.compile(nested, env="admission").tree(), ROOTS)
    assert python.evaluate({"object": {"a": list(range(20))}}) is True  # 20 + 400 + 8,000 iterations
    with pytest.raises(Refused):
        python.evaluate({"object": {"a": list(range(100))}})  # a million: past the budget, the runtime's turn
    for scans in ("object.a.all(x, !(x in object.b))",
                  "object.a.all(x, object.c != object.b)"):  # each scan and comparison is charged too
        python = compile_tree(CPP.compile(scans, env="admission").tree(), ROOTS)
        with pytest.raises(Refused):
            python.evaluate({"object": {"a": list(range(5000)), "b": list(range(100_000)), "c": list(range(100_000))}})
    doubling = "object.a.map(x, object.a).map(y, y + y + y + y)"
    python = compile_tree(CPP.compile(doubling, env="admission").tree(), ROOTS)
    with pytest.raises(Refused):
        python.evaluate({"object": {"a": list(range(3000))}})


def test_a_joined_list_tells_each_element_apart():
    text = "cel.bind(v, object.spec, [v.a == 1, v.b == 1, v.a + 1])"
    # a joined program is ours (webhook.families.cel.fusedgroup), compiled unchecked: its list mixes types
    python = compile_tree(CPP.compile_bound(text, [], "admission").tree(), ROOTS, joined=True)
    assert python.evaluate({"object": {"spec": {"a": 1}}}) == [True, NOT_TOLD, 2]
    alone = compile_tree(CPP.compile_bound(text, [], "admission").tree(), ROOTS)  # not joined: one value, or none
    with pytest.raises(Refused):
        alone.evaluate({"object": {"spec": {"a": 1}}})
    with pytest.raises(Refused):  # a bind that errs: no element is told
        python.evaluate({"object": {}})


def test_generated_source_holds_no_text_of_the_expression():
    """Strings and names of the policy never become source: a hostile field name is a constant."""
    hostile = "object[\"'); import os; ('\"] == '\\n'"
    program = CPP.compile(hostile, env="admission")
    python = compile_tree(program.tree(), ROOTS)
    assert python is not None and "import" not in python.source and "\\n" not in python.source
    assert python.evaluate({"object": {"'); import os; ('": "\n"}}) is True


def test_helpers_cover_every_name_the_generator_emits():
    names = {name for name in to_python._HELPERS}
    assert {"_eq", "_refuse", "_truth", "_NONE"} <= names


@pytest.mark.parametrize("expression", [
    "object.spec.containers.all(i, c, i == 0 || c.image.startsWith('registry.platform/'))",
    "object.spec.containers.exists(i, c, i > 0 && c.name == 'b')",
    "object.spec.containers.existsOne(i, c, has(c.securityContext))",
    "object.spec.containers.transformList(i, c, i > 0, c.name)",
])
def test_two_variable_comprehensions_over_lists_compile_and_agree(expression):
    """The rewritten form (webhook.cel.comprehensions) ranges over a list's indexes: the Python form gives the
    runtime's value; over a map (whose order Python need not share) it refuses."""
    counts = {"told": 0, "refused": 0, "not compiled": 0, "not CEL": 0}
    _check(expression, PODS, counts)
    assert counts["not compiled"] == 0 and counts["told"] >= 3, counts


def test_a_two_variable_comprehension_over_a_map_is_left_to_the_runtime():
    python = compile_tree(CPP.compile("object.m.all(k, v, v > 0)", env="admission").tree(), ROOTS)
    assert python is not None
    with pytest.raises(Refused):
        python.evaluate({"object": {"m": {"a": 1}}})
