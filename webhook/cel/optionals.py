"""Where an optional value could be stored in a list or a map that the default runtime then hands to Python.

cel-expr-python 0.1.3 cannot convert a list or map holding an optional (`[object.?a]`, `{'k': optional.none()}`,
`[1, 2].map(x, object.?a)`) into Python: a list raises SystemError, a map crashes the process (a segmentation
fault). It converts when an expression's value is returned and when one of our Python functions (the
Kubernetes and Kyverno libraries) is called with such a list or map. A policy with such an expression took
the whole webhook down at its first evaluation; cel-go (Kubernetes) evaluates the same expression.

So the tree the runtime compiled (webhook.cel.checked) is read once per expression: which values may be an
optional or may hold one, and whether one of those can reach Python. Such an expression does not compile,
with a message that says how to write it (`[?x]`, `{?'k': x}`, `.orValue(...)`). Holding optionals inside the
expression is fine (`[object.?a][0].orValue(1)`, `[object.?a].size()`): the runtime never converts them.

The reading is conservative where it cannot know (a field of a map that may hold optionals may be one), and
exact where every real policy is: optionals made by `.?`, `[?]`, `optional.*` and a list's `first()` and `last()`,
consumed by `orValue`, `value`, `hasValue`, `or` and further optional selects.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from webhook.cel.checked import Call, Comprehension, Const, Ident, ListOf, Node, Select, Struct
from webhook.model.quickinit import frozen_dataclass


@frozen_dataclass
class Value:
    """What a subexpression's value may be: an optional itself (`optional`); a list, map or optional whose
    own parts (elements, keys and values, the optional's value) may be optionals (`holds`); one with
    optionals deeper down (`deep`)."""

    optional: bool = False
    holds: bool = False
    deep: bool = False

    def __or__(self, other: "Value") -> "Value":
        return Value(self.optional or other.optional, self.holds or other.holds, self.deep or other.deep)

    @property
    def parts(self) -> "Value":
        """What one of its parts may be."""
        return Value(self.holds, self.deep, self.deep)

    @property
    def holds_optionals(self) -> bool:
        return self.holds or self.deep


_PLAIN = Value()


def _holding(parts: Value) -> Value:
    """A list, map or optional whose parts may be `parts`."""
    return Value(False, parts.optional, parts.holds or parts.deep)


def _part(container: Value) -> Value:
    """A field or element of `container`: one of a map or list holding optionals may be one; of an optional,
    it is an optional itself (the optional library selects and indexes through optionals)."""
    through = Value(True, container.deep, container.deep) if container.optional else _PLAIN
    return container.parts | through


class OptionalEscapes(ValueError):
    """An optional can reach a conversion to Python; the message says where and what to write instead."""


_HOW = "write the element as `?x` (`[?object.?a]`), the entry as `?'key': x`, or end the optional with `.orValue(...)`"


def check(tree: Node, python_functions: frozenset[str]) -> None:
    """Raise OptionalEscapes when the expression's value may hold an optional, or a call of one of
    `python_functions` (what our libraries implement in Python) may get a value that holds one."""
    if _Reader(python_functions).read(tree, {}).holds_optionals:
        raise OptionalEscapes(f"its value may be a list or map holding an optional (from `.?`, `[?]` or `optional.*`): {_HOW}")


class _Reader:
    def __init__(self, python_functions: frozenset[str]) -> None:
        self.python_functions = python_functions

    def read(self, node: Node, scope: Mapping[str, Value]) -> Value:
        if isinstance(node, Const):
            return _PLAIN
        if isinstance(node, Ident):
            return scope.get(node.name, _PLAIN)
        if isinstance(node, Select):
            return _PLAIN if node.test_only else _part(self.read(node.operand, scope))
        if isinstance(node, ListOf):
            return self._container(node.elements, node.optional, scope)
        if isinstance(node, Struct):
            keys = [key for key, _ in node.entries if key is not None]
            values = self._container([value for _, value in node.entries], node.optional, scope)
            return values | self._container(keys, frozenset(), scope)
        if isinstance(node, Comprehension):
            return self._comprehension(node, scope)
        return self._call(node, scope)

    def _container(self, elements: Sequence[Node], optional: frozenset[int], scope: Mapping[str, Value]) -> Value:
        stored = _PLAIN
        for index, element in enumerate(elements):
            value = self.read(element, scope)
            stored = stored | (value.parts if index in optional else value)  # `?e` stores e's value, if any
        return _holding(stored)

    def _call(self, node: Call, scope: Mapping[str, Value]) -> Value:
        target = self.read(node.target, scope) if node.target is not None else _PLAIN
        args = [self.read(arg, scope) for arg in node.args]
        name = node.function
        if name in self.python_functions and (target.holds_optionals or any(a.holds_optionals for a in args)):
            raise OptionalEscapes(f"{name}() may be given a list or map holding an optional (from `.?`, `[?]` or "
                                  f"`optional.*`), which the runtime cannot pass on: {_HOW}")
        first = args[0] if args else _PLAIN
        if name in ("_?._", "_[?_]"):  # a field or element of the operand, as an optional
            return Value(True, first.holds, first.deep)
        if name == "or":  # the receiver's value, or the argument's
            return Value(True, target.holds or first.holds, target.deep or first.deep)
        if name in ("optional.of", "optional.ofNonZeroValue"):
            return Value(True, first.optional, first.holds_optionals)
        if name == "optional.none":
            return Value(True)
        if name in ("first", "last") and node.target is not None:  # the lists library: an element, as an optional
            return Value(True, target.holds, target.deep)
        if name == "orValue":  # the optional's value, or the default
            return target.parts | first
        if name == "value":
            return target.parts
        if name == "dyn":
            return first
        if name == "_?_:_" and len(args) == 3:
            return args[1] | args[2]
        if name == "_[_]":
            return _part(first)
        if name == "_+_" and len(args) == 2:  # list concatenation keeps what both held
            return Value(False, args[0].holds or args[1].holds, args[0].deep or args[1].deep)
        return _PLAIN  # anything else gives a plain value (a bool, a number, a text, a list of plain values)

    def _comprehension(self, node: Comprehension, scope: Mapping[str, Value]) -> Value:
        element = self.read(node.iter_range, scope).parts
        inner = {**scope, node.iter_var: element}
        if node.iter_var2:
            inner[node.iter_var2] = element
        accu = self.read(node.accu_init, inner)
        for _ in range(4):  # the accumulator's reading only grows: three flags, a fixed point within four steps
            inner[node.accu_var] = accu
            grown = accu | self.read(node.loop_step, inner)
            if grown == accu:
                break
            accu = grown
        inner[node.accu_var] = accu
        self.read(node.loop_condition, inner)
        return self.read(node.result, inner)
