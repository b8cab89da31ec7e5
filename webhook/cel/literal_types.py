"""Kubernetes' compile-time type checks that the C++ runtime's checker does not make, read off its checked tree.

Kubernetes' CEL environment (k8s.io/apiserver/pkg/cel/environment) turns on cel-go's homogeneous aggregate
literals: every element of a list literal, every key and every value of a map literal must be of one type
(`[1, 'a']`, `{1: 'a', true: 'b'}`, `[object.x, 'a']` do not compile: `dyn` is a type of its own there). And
its set and list functions are typed `list(T)`: `sets.contains(['a'], [1])` and `['a'].indexOf(1)` do not
compile. Our libraries declare those functions on `dyn` and the runtime's checker takes mixed literals, so a
policy Kubernetes refuses would load here, and a map literal's keys `1` and `true` would collapse into one
Python key. The types are the checker's own (the CheckedExpr's type map), so what is compared is exactly
what cel-go compares; a type still holding a type parameter (an empty list's element) matches anything.
cel-go also checks constant arguments when it compiles: a format string's argument count (ext/strings.go)
and a regex literal (cel.ValidateRegexLiterals); here both were runtime errors, so a policy loaded.
"""

from __future__ import annotations

import re
from typing import Iterator

from webhook.cel.checked import fields, one_field
from webhook.model.regex import compile_linear

_REGEX_FUNCTIONS = frozenset({"matches", "find", "findAll"})
_TYPED_SETS = frozenset({"sets.contains", "sets.equivalent", "sets.intersects"})
_TYPED_LIST_MEMBERS = frozenset({"indexOf", "lastIndexOf"})
_DYN, _PRIMITIVE, _LIST, _MAP, _TYPE_PARAM, _ERROR = 1, 3, 6, 7, 10, 12
_PRIMITIVES = {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}


class RefusedLiteral(ValueError):
    """Kubernetes' checker refuses the expression: a literal mixing types, a typed function given two types, a
    format string given the wrong number of arguments, an invalid regex literal; the message says which."""


def _type_map(checked: bytes) -> dict[int, bytes]:
    types: dict[int, bytes] = {}
    for number, wire, entry in fields(checked):
        if number == 3 and wire == 2:
            key, value = 0, b""
            for m, _, raw in fields(entry):
                if m == 1:
                    key = raw
                elif m == 2:
                    value = raw
            types[key] = value
    return types


def _free(type_: bytes) -> bool:
    """A type parameter or an error anywhere in it: it unifies with anything."""
    for number, wire, value in fields(type_):
        if number in (_TYPE_PARAM, _ERROR):
            return True
        if number in (_LIST, _MAP) and wire == 2:
            if any(_free(inner) for m, w, inner in fields(value) if w == 2):
                return True
    return False


def _same(a: bytes, b: bytes) -> bool:
    return a == b or _free(a) or _free(b)


def _name(type_: bytes) -> str:
    for number, wire, value in fields(type_):
        if number == _DYN:
            return "dyn"
        if number == 2:
            return "null"
        if number == _PRIMITIVE:
            return _PRIMITIVES.get(value, "primitive")
        if number == _LIST and wire == 2:
            inner = one_field(value, 1)
            return f"list({_name(inner) if inner is not None else '?'})"
        if number == _MAP and wire == 2:
            return "map"
        if number in (5, 9, 14):
            return "a named type"
    return "a type"


def _element(list_type: bytes) -> bytes | None:
    for number, wire, value in fields(list_type):
        if number == _LIST and wire == 2:
            return one_field(value, 1)
    return None


def _has_dyn(type_: bytes) -> bool:
    for number, wire, value in fields(type_):
        if number == _DYN:
            return True
        if number in (_LIST, _MAP) and wire == 2 and any(_has_dyn(inner) for _, w, inner in fields(value) if w == 2):
            return True
    return False


def _concrete(type_: bytes | None) -> bool:
    """No dyn and no type parameter anywhere in it: a typed function's T that cannot unify with another."""
    return type_ is not None and not _free(type_) and not _has_dyn(type_)


def _children(expr: bytes) -> Iterator[tuple[int, bytes]]:
    """(kind, body) of the expression, and every sub-expression's buffer after it."""
    for number, wire, body in fields(expr):
        if 3 <= number <= 9 and wire == 2:
            yield number, body


def _subexpressions(kind: int, body: bytes) -> Iterator[bytes]:
    for number, wire, value in fields(body):
        if wire != 2:
            continue
        if kind == 5 and number == 1 or kind == 6 and number in (1, 3) or kind == 7 and number == 1:
            yield value
        elif kind == 8 and number == 2:
            yield from (v for m, w, v in fields(value) if m in (3, 4) and w == 2)
        elif kind == 9 and number in (2, 4, 5, 6, 7):
            yield value


def _id(expr: bytes) -> int:
    return next((value for number, wire, value in fields(expr) if number == 2 and wire == 0), 0)


def _check_homogeneous(what: str, types: dict[int, bytes], members: list[bytes]) -> None:
    first: bytes | None = None
    for member in members:
        found = types.get(_id(member))
        if found is None:
            continue
        if first is None:
            first = found
        elif not _same(first, found):
            raise RefusedLiteral(f"{what} mixes types: expected {_name(first)} but found {_name(found)} "
                             "(Kubernetes requires one type in a literal)")


def _constant_string(expr: bytes | None) -> str | None:
    if expr is None:
        return None
    for kind, body in _children(expr):
        if kind == 3:
            text = one_field(body, 6)
            return None if text is None else text.decode("utf-8", "replace")
    return None


def _list_size(expr: bytes) -> int | None:
    for kind, body in _children(expr):
        if kind == 7:
            return sum(1 for n, w, _ in fields(body) if n == 1 and w == 2)
    return None


def _format_verbs(text: str) -> int:
    """The arguments a format string takes: each `%` verb (its precision skipped), `%%` none."""
    count, i = 0, 0
    while i < len(text):
        if text[i] == "%":
            if text[i + 1:i + 2] == "%":
                i += 2
                continue
            count += 1
            i += 1
            while i < len(text) and (text[i].isdigit() or text[i] == "."):
                i += 1
        i += 1
    return count


def _check_literal_arguments(function: str, target: bytes | None, args: list[bytes]) -> None:
    """cel-go checks at compile time what a constant makes certain: a format string's argument count, a regex."""
    if function == "format" and len(args) == 1:
        text, size = _constant_string(target), _list_size(args[0])
        if text is not None and size is not None and _format_verbs(text) != size:
            raise RefusedLiteral(f"format string {text!r} takes {_format_verbs(text)} arguments, {size} supplied")
    elif function in _REGEX_FUNCTIONS and args:
        pattern = _constant_string(args[-1])
        if pattern is not None:
            try:
                compile_linear(pattern)
            except re.error as exc:
                raise RefusedLiteral(f"invalid regular expression {pattern!r} in {function}: {exc}") from None


def _check_call(body: bytes, types: dict[int, bytes]) -> None:
    function = (one_field(body, 2) or b"").decode()
    _check_literal_arguments(function, one_field(body, 1),
                             [value for number, wire, value in fields(body) if number == 3 and wire == 2])
    if function not in _TYPED_SETS and function not in _TYPED_LIST_MEMBERS:
        return
    target = one_field(body, 1)
    args = [value for number, wire, value in fields(body) if number == 3 and wire == 2]
    if function in _TYPED_SETS and len(args) == 2:
        a, b = (_element(types.get(_id(arg), b"")) for arg in args)
        if _concrete(a) and _concrete(b) and a != b:
            raise RefusedLiteral(f"{function} compares a list({_name(a or b'')}) with a list({_name(b or b'')})")
    elif function in _TYPED_LIST_MEMBERS and target is not None and len(args) == 1:
        element, argument = _element(types.get(_id(target), b"")), types.get(_id(args[0]))
        if _concrete(element) and _concrete(argument) and element != argument:
            raise RefusedLiteral(f"{function} looks for a {_name(argument or b'')} in a list({_name(element or b'')})")


def _optional_value(type_: bytes) -> bytes:
    """The value type of `optional_type(T)` (an abstract type), for a list element written `?e`."""
    abstract = one_field(type_, 14)
    if abstract is not None and one_field(abstract, 1) == b"optional_type":
        inner = one_field(abstract, 2)
        if inner is not None:
            return inner
    return type_


def _optional_indices(body: bytes) -> set[int]:
    found: set[int] = set()
    for number, wire, value in fields(body):
        if number == 2:
            found.update(_packed(value) if wire == 2 else (value,))
    return found


def _packed(buf: bytes) -> list[int]:
    values, pos = [], 0
    while pos < len(buf):
        value = shift = 0
        while True:
            byte = buf[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        values.append(value)
    return values


def check(serialized: bytes) -> None:
    """RefusedLiteral where Kubernetes' checker would refuse the program (`Expression.serialize()`'s output). Literals
    inside a `format` call are exempt, as cel-go's strings library exempts them (its argument list mixes types)."""
    checked = one_field(serialized, 2)
    expr = one_field(checked, 4) if checked is not None else None
    if checked is None or expr is None:
        return
    types = _type_map(checked)
    pending = [(expr, False)]
    while pending:
        current, exempt = pending.pop()
        for kind, body in _children(current):
            if kind == 6 and one_field(body, 2) == b"format":
                exempt = True
            if kind == 7 and not exempt:
                optional = _optional_indices(body)
                elements = [v for n, w, v in fields(body) if n == 1 and w == 2]
                element_types = {_id(e): _optional_value(types[_id(e)]) if i in optional else types[_id(e)]
                                 for i, e in enumerate(elements) if _id(e) in types}
                _check_homogeneous("a list literal", element_types, elements)
            elif kind == 8 and not exempt and not one_field(body, 1):   # a map literal (a construction names a type)
                entries = [e for n, w, e in fields(body) if n == 2 and w == 2]
                plain = [e for e in entries if not any(m == 5 and v for m, _, v in fields(e))]
                _check_homogeneous("a map literal's keys", types, [k for e in plain if (k := one_field(e, 3)) is not None])
                _check_homogeneous("a map literal's values", types, [v for e in plain if (v := one_field(e, 4)) is not None])
            elif kind == 6:
                _check_call(body, types)
            pending.extend((sub, exempt) for sub in _subexpressions(kind, body))
