"""CEL strings extension (cel-go `ext.Strings`, as Kubernetes enables it), written once in Python.

Both backends use these implementations: cel-expr-python's own strings extension declares `indexOf`,
`lastIndexOf` and `reverse` for strings only, and the Kubernetes lists library needs list overloads of
the same names, which the C++ runtime refuses to add to an extension's declaration.
"""

from __future__ import annotations

import json
import math
from typing import Any, Sequence

from webhook.cel.functions import Library, fn, method
from webhook.cel.values import describe, kind_of


def cel_equal(a: Any, b: Any) -> bool:
    """CEL equality: numbers compare across int/uint/double, bools only with bools, containers deeply."""
    ka, kb = kind_of(a), kind_of(b)
    numeric = {"int", "uint", "double"}
    if ka in numeric and kb in numeric:
        return a == b
    if ka != kb:
        return False
    if ka == "list":
        return len(a) == len(b) and all(cel_equal(x, y) for x, y in zip(a, b))
    if ka == "map":
        return a.keys() == b.keys() and all(cel_equal(a[k], b[k]) for k in a)
    return a == b


def _offset(text: str, offset: int) -> int:
    if offset < 0 or offset > len(text):
        raise IndexError(f"index out of range: {offset}")
    return offset


def index_of(text: str, sub: str, offset: int = 0) -> int:
    return text.find(sub, _offset(text, offset))


def last_index_of(text: str, sub: str, offset: int | None = None) -> int:
    if offset is None:
        return text.rfind(sub)
    return text.rfind(sub, 0, _offset(text, offset) + len(sub))


def char_at(text: str, index: int) -> str:
    return text[_offset(text, index):_offset(text, index) + 1]


def substring(text: str, start: int, end: int | None = None) -> str:
    end = len(text) if end is None else _offset(text, end)
    if _offset(text, start) > end:
        raise IndexError(f"invalid substring range. start: {start}, end: {end}")
    return text[start:end]


def _ascii(text: str, upper: bool) -> str:
    convert = str.upper if upper else str.lower
    return "".join(convert(c) if c.isascii() else c for c in text)


def replace(text: str, old: str, new: str, count: int = -1) -> str:
    return text.replace(old, new, count if count >= 0 else -1)


def split(text: str, sep: str, limit: int = -1) -> list[str]:
    """Go strings.SplitN: 0 pieces for limit 0, an empty separator splits into characters."""
    if limit == 0:
        return []
    if sep == "":
        chars = list(text)
        if 0 < limit < len(chars):
            return chars[:limit - 1] + ["".join(chars[limit - 1:])]
        return chars
    return text.split(sep, limit - 1 if limit > 0 else -1)


def join(items: Sequence[Any], sep: str = "") -> str:
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"join: list element is a {describe(item)}, not a string")
    return sep.join(items)


def quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _as_text(value: Any) -> str:
    kind = kind_of(value)
    if kind == "string":
        return value
    if kind == "bool":
        return "true" if value else "false"
    if kind == "null":
        return "null"
    if kind == "double":
        return _double_text(value)
    if kind == "list":
        return "[" + ", ".join(_as_text(v) for v in value) + "]"
    if kind == "map":
        return "{" + ", ".join(f"{_as_text(k)}:{_as_text(v)}" for k, v in value.items()) + "}"
    if kind == "bytes":
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def _double_text(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value).rstrip("0").rstrip(".") if "." in repr(value) and "e" not in repr(value) else repr(value)


def _format_one(verb: str, precision: int | None, value: Any) -> str:
    kind = kind_of(value)
    if verb == "s":
        return _as_text(value)
    if verb == "d":
        if kind not in ("int", "uint"):
            raise TypeError(f"format: %d needs an integer, got {describe(value)}")
        return str(value)
    if verb in "fe":
        if kind not in ("int", "uint", "double"):
            raise TypeError(f"format: %{verb} needs a number, got {describe(value)}")
        return f"{float(value):.{6 if precision is None else precision}{verb}}"
    if verb in "box":
        if kind in ("string", "bytes") and verb == "x":
            data = value.encode() if kind == "string" else bytes(value)
            return data.hex()
        if kind not in ("int", "uint"):
            raise TypeError(f"format: %{verb} needs an integer, got {describe(value)}")
        return format(value, verb)
    if verb == "X":
        return _format_one("x", precision, value).upper()
    raise ValueError(f"format: unknown verb %{verb}")


# the exact decimal value of a double ends within 1,074 digits after the point (2^-1074 has that many):
# anything longer is only zeros
MAX_PRECISION = 1074


def format_string(template: str, args: Sequence[Any]) -> str:
    out: list[str] = []
    i = used = 0
    while i < len(template):
        ch = template[i]
        i += 1
        if ch != "%":
            out.append(ch)
            continue
        if i < len(template) and template[i] == "%":
            out.append("%")
            i += 1
            continue
        precision = None
        if i < len(template) and template[i] == ".":
            j = i + 1
            while j < len(template) and template[j].isdigit():
                j += 1
            if j - i - 1 > 4 or int(template[i + 1:j] or 0) > MAX_PRECISION:
                # '%.2000000000f' made a 2 GB string in 13 s on the event loop, the cost limit unaware
                raise ValueError(f"format: precision {template[i + 1:j]} is beyond the {MAX_PRECISION} digits "
                                 "a double can hold after the point")
            precision, i = int(template[i + 1:j] or 0), j
        if i >= len(template):
            raise ValueError("format: unterminated format verb")
        if used >= len(args):
            raise IndexError(f"format: index {used} out of range")
        out.append(_format_one(template[i], precision, args[used]))
        used, i = used + 1, i + 1
    return "".join(out)


def _list_index(items: Sequence[Any], value: Any) -> int:
    return next((i for i, item in enumerate(items) if cel_equal(item, value)), -1)


def _list_last_index(items: Sequence[Any], value: Any) -> int:
    return next((i for i in range(len(items) - 1, -1, -1) if cel_equal(items[i], value)), -1)


STRINGS = Library("strings", (
    method("charAt", ["string", "int"], "string", char_at),
    method("indexOf", ["string", "string"], "int", index_of),
    method("indexOf", ["string", "string", "int"], "int", index_of),
    method("indexOf", ["list", "dyn"], "int", _list_index),
    method("lastIndexOf", ["string", "string"], "int", last_index_of),
    method("lastIndexOf", ["string", "string", "int"], "int", last_index_of),
    method("lastIndexOf", ["list", "dyn"], "int", _list_last_index),
    method("lowerAscii", ["string"], "string", lambda s: _ascii(s, False)),
    method("upperAscii", ["string"], "string", lambda s: _ascii(s, True)),
    method("replace", ["string", "string", "string"], "string", replace),
    method("replace", ["string", "string", "string", "int"], "string", replace),
    method("split", ["string", "string"], "list", split),
    method("split", ["string", "string", "int"], "list", split),
    method("substring", ["string", "int"], "string", substring),
    method("substring", ["string", "int", "int"], "string", substring),
    method("trim", ["string"], "string", lambda s: s.strip()),
    method("join", ["list"], "string", join),
    method("join", ["list", "string"], "string", join),
    method("reverse", ["string"], "string", lambda s: s[::-1]),
    method("reverse", ["list"], "list", lambda items: list(items)[::-1]),
    method("format", ["string", "list"], "string", format_string),
    fn("strings.quote", ["string"], "string", quote),
))
