"""The expression tree cel-expr-python compiled, read back from its serialized CheckedExpr.

Why the runtime's own tree rather than a parser of ours: what compiles a program to Python
(webhook.cel.to_python) must see the program that runs, with every rewrite applied and every macro expanded
by the runtime's parser (`all`, `exists`, `map`, `filter`, `has`, `cel.bind`, `optMap` ...), precedence
and all. `Expression.serialize()` gives a `google.protobuf.Any` holding a `cel.expr.CheckedExpr`; the
cel.expr protobuf classes are not installed, so the few messages needed are decoded from the protobuf
wire format here (field numbers from cel-spec's `proto/cel/expr/syntax.proto` and `checked.proto`).
Anything this module does not recognise raises ValueError; callers then assume the program reads everything.
"""

from __future__ import annotations

import struct
from typing import Any, Iterator, Union

from webhook.model.quickinit import frozen_dataclass

_CHECKED_EXPR = "type.googleapis.com/cel.expr.CheckedExpr"


@frozen_dataclass
class Const:
    value: Any  # the constant's Python value (an int64 signed, a double a float)
    kind: str = ""  # null, bool, int, uint, double, string or bytes (cel.expr.Constant's field); "" unknown


@frozen_dataclass
class Ident:
    name: str


@frozen_dataclass
class Select:
    operand: "Node"
    field: str
    test_only: bool  # has(operand.field)


@frozen_dataclass
class Call:
    function: str
    target: "Node | None"  # the receiver of a member call
    args: tuple["Node", ...]


@frozen_dataclass
class ListOf:
    elements: tuple["Node", ...]
    optional: frozenset[int] = frozenset()  # positions written `?e`: an optional whose value (if any) is the element


@frozen_dataclass
class Struct:
    """A map literal or a message construction: keys (None for a message field) and values."""

    entries: tuple[tuple["Node | None", "Node"], ...]
    optional: frozenset[int] = frozenset()  # entries written `?k: v`: an optional whose value (if any) is stored


@frozen_dataclass
class Comprehension:
    iter_var: str
    iter_var2: str  # "" unless a two-variable comprehension
    iter_range: "Node"
    accu_var: str
    accu_init: "Node"
    loop_condition: "Node"
    loop_step: "Node"
    result: "Node"


Node = Union[Const, Ident, Select, Call, ListOf, Struct, Comprehension]


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 70:
            raise ValueError("varint too long")


def fields(buf: bytes) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value): ints for varints and fixed widths, bytes for length-delimited."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = struct.unpack_from("<Q", buf, pos)[0], pos + 8
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
            if pos > len(buf):
                raise ValueError("truncated field")
        elif wire == 5:
            value, pos = struct.unpack_from("<I", buf, pos)[0], pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        yield number, wire, value


def one_field(buf: bytes, number: int) -> bytes | None:
    found = None
    for n, wire, value in fields(buf):
        if n == number and wire == 2:
            found = value  # the last occurrence wins, as protobuf parses it
    return found


def _text(value: bytes) -> str:
    return value.decode("utf-8")


def _const(buf: bytes) -> Const:
    for n, wire, value in fields(buf):
        if n == 1:
            return Const(None, "null")
        if n == 2:
            return Const(bool(value), "bool")
        if n == 3:  # a varint of the two's complement
            return Const(value - (1 << 64) if value >= 1 << 63 else value, "int")
        if n == 4:
            return Const(value, "uint")
        if n == 5 and wire == 1:
            return Const(struct.unpack("<d", struct.pack("<Q", value))[0], "double")
        if n == 6:
            return Const(_text(value), "string")
        if n == 7:
            return Const(bytes(value), "bytes")
        if 5 <= n:
            return Const(value)  # a deprecated duration or timestamp constant: no kind a reader relies on
    return Const(None)


def _expr(buf: bytes, depth: int = 0) -> Node:
    if depth > 200:
        raise ValueError("expression nested too deeply")
    kind = None
    for n, wire, value in fields(buf):
        if 3 <= n <= 9 and wire == 2:
            kind = (n, value)
    if kind is None:
        raise ValueError("expression without a kind")
    n, body = kind
    if n == 3:
        return _const(body)
    if n == 4:
        return Ident(_text(one_field(body, 1) or b""))
    sub = (lambda b: _expr(b, depth + 1))
    if n == 5:
        operand, field, test_only = None, "", False
        for m, wire, value in fields(body):
            if m == 1:
                operand = sub(value)
            elif m == 2:
                field = _text(value)
            elif m == 3:
                test_only = bool(value)
        if operand is None:
            raise ValueError("select without an operand")
        return Select(operand, field, test_only)
    if n == 6:
        target, function, args = None, "", []
        for m, wire, value in fields(body):
            if m == 1:
                target = sub(value)
            elif m == 2:
                function = _text(value)
            elif m == 3:
                args.append(sub(value))
        return Call(function, target, tuple(args))
    if n == 7:
        elements, optional = [], set()
        for m, wire, value in fields(body):
            if m == 1 and wire == 2:
                elements.append(sub(value))
            elif m == 2:  # optional_indices: packed (length-delimited) or one varint each
                optional.update(_packed(value) if wire == 2 else (value,))
        return ListOf(tuple(elements), frozenset(optional))
    if n == 8:
        entries = [_entry(value, sub) for m, wire, value in fields(body) if m == 2]
        return Struct(tuple(entry for entry, _ in entries), frozenset(i for i, (_, opt) in enumerate(entries) if opt))
    return _comprehension(body, sub)


def _packed(buf: bytes) -> list[int]:
    values, pos = [], 0
    while pos < len(buf):
        value, pos = _varint(buf, pos)
        values.append(value)
    return values


def _entry(buf: bytes, sub: Any) -> tuple[tuple[Node | None, Node], bool]:
    """((key, value), whether the entry is optional)."""
    key, value, optional = None, None, False
    for m, wire, raw in fields(buf):
        if m == 3:
            key = sub(raw)
        elif m == 4:
            value = sub(raw)
        elif m == 5:
            optional = bool(raw)
    if value is None:
        raise ValueError("struct entry without a value")
    return (key, value), optional


def _comprehension(buf: bytes, sub: Any) -> Comprehension:
    parts: dict[int, Any] = {}
    for m, wire, value in fields(buf):
        parts[m] = _text(value) if m in (1, 3, 8) else sub(value)
    if any(m not in parts for m in (1, 2, 3, 4, 5, 6, 7)):
        raise ValueError("incomplete comprehension")
    return Comprehension(parts[1], parts.get(8, ""), parts[2], parts[3], parts[4], parts[5], parts[6], parts[7])


def parse_checked(serialized: bytes) -> Node:
    """The expression tree of `Expression.serialize()`'s output; ValueError if it is not what is expected."""
    if _text(one_field(serialized, 1) or b"") != _CHECKED_EXPR:
        raise ValueError("not a serialized cel.expr.CheckedExpr")
    checked = one_field(serialized, 2)
    expr = one_field(checked, 4) if checked is not None else None
    if expr is None:
        raise ValueError("CheckedExpr without an expression")
    return _expr(expr)
