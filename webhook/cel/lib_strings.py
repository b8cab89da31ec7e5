"""CEL strings extension (cel-go `ext.Strings`, as Kubernetes enables it), written once in Python.

Both backends use these implementations: cel-expr-python's own strings extension declares `indexOf`,
`lastIndexOf` for strings only, and the Kubernetes lists library needs list overloads of
the same names, which the C++ runtime refuses to add to an extension's declaration.
"""

from __future__ import annotations

from typing import Any, Sequence

from webhook.cel import cost
from webhook.cel.functions import Library, fn, method
from webhook.cel.lib_format import format_string
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


def _search_start(text: str, offset: int) -> int | None:
    """cel-go's indexOf/lastIndexOf offset (ext/strings.go at the version Kubernetes 1.34 pins): a negative one is
    an error, one at or past the end finds nothing (None) rather than failing."""
    if offset < 0:
        raise IndexError(f"index out of range: {offset}")
    return None if offset >= len(text) else offset


def index_of(text: str, sub: str, offset: int = 0) -> int:
    if sub == "":  # cel-go answers the offset itself, unchecked
        return offset
    start = _search_start(text, offset)
    return -1 if start is None else text.find(sub, start)


def last_index_of(text: str, sub: str, offset: int | None = None) -> int:
    if offset is None:
        if sub == "":
            return len(text)
        if len(text.encode()) < len(sub.encode()):   # cel-go compares byte lengths here
            return -1
        offset = len(text) - 1
    if sub == "":
        return offset
    start = _search_start(text, offset)
    return -1 if start is None else text.rfind(sub, 0, start + len(sub))


def char_at(text: str, index: int) -> str:
    return text[_offset(text, index):_offset(text, index) + 1]


def substring(text: str, start: int, end: int | None = None) -> str:
    if end is not None and start > end:
        raise IndexError(f"invalid substring range. start: {start}, end: {end}")
    start = _offset(text, start)
    end = len(text) if end is None else _offset(text, end)
    return text[start:end]


def _ascii(text: str, upper: bool) -> str:
    if text.isascii():  # the common case, at C speed
        return text.upper() if upper else text.lower()
    convert = str.upper if upper else str.lower
    return "".join(convert(c) if c.isascii() else c for c in text)


def replace(text: str, old: str, new: str, count: int = -1) -> str:
    # the result's length before it is built: `replace('x', 'xxxxxxxx')` twice on a 100 kB annotation built
    # 380 MB before the size of the result was looked at
    found = text.count(old) if old else len(text) + 1
    found = found if count < 0 else min(found, count)
    cost.result_size(len(text) + found * (len(new) - len(old)), "replace")
    return text.replace(old, new, count if count >= 0 else -1)


def _twice(text: str, *_: Any) -> float:
    """Kubernetes' cost of replace and split: the traversal, and the construction of the result."""
    return 1 + 2 * len(text) * cost.STRING_TRAVERSAL


def split(text: str, sep: str, limit: int = -1) -> list[str]:
    """Go strings.SplitN: 0 pieces for limit 0, an empty separator splits into characters."""
    if limit == 0:
        return []
    pieces = len(text) if sep == "" else text.count(sep) + 1
    cost.result_size(pieces if limit < 0 else min(pieces, limit), "split", per_element=1.0)
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
    # the length before the string: 40 copies of a 100 kB annotation joined is 4 MB, 4,000 of them 400 MB
    cost.result_size(sum(map(len, items)) + len(sep) * max(len(items) - 1, 0), "join")
    return sep.join(items)


_QUOTED = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
           "\\": "\\\\", '"': '\\"'}
# Go's strings.TrimSpace: unicode.IsSpace (Python's str.strip also strips U+001C..U+001F)
_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
         "\u2028\u2029\u202f\u205f\u3000"


def quote(text: str) -> str:
    """cel-go's strings.quote: the CEL escapes only; other characters as they are, lone surrogates U+FFFD."""
    cost.result_size(2 * len(text) + 2, "strings.quote")  # at most two characters for each
    return '"' + "".join(_QUOTED.get(ch) or ("\ufffd" if "\ud800" <= ch <= "\udfff" else ch) for ch in text) + '"'


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
    method("replace", ["string", "string", "string"], "string", replace, _twice),
    method("replace", ["string", "string", "string", "int"], "string", replace, _twice),
    method("split", ["string", "string"], "list", split, _twice),
    method("split", ["string", "string", "int"], "list", split, _twice),
    method("substring", ["string", "int"], "string", substring),
    method("substring", ["string", "int", "int"], "string", substring),
    method("trim", ["string"], "string", lambda s: s.strip(_SPACE)),
    method("join", ["list"], "string", join),
    method("join", ["list", "string"], "string", join),
    method("reverse", ["list"], "list", lambda items: list(items)[::-1]),
    method("format", ["string", "list"], "string", format_string),
    fn("strings.quote", ["string"], "string", quote),
))
