"""Kubernetes lists, sets and regex libraries, and cel-go's list extension (slice, flatten, sort...)."""

from __future__ import annotations

import datetime
import functools
import re
from typing import Any, Sequence

from webhook.cel.functions import Library, fn, method
from webhook.cel.lib_strings import cel_equal
from webhook.cel.values import describe, kind_of
from webhook.model.regex import compile_linear

_NUMERIC = {"int", "uint", "double"}
_ORDERED = _NUMERIC | {"string", "bytes", "bool", "timestamp", "duration"}


def _order_class(value: Any) -> str:
    kind = kind_of(value)
    if kind not in _ORDERED:
        raise TypeError(f"{describe(value)} values are not comparable")
    return "number" if kind in _NUMERIC else kind


def _check_comparable(items: Sequence[Any]) -> None:
    classes = {_order_class(item) for item in items}
    if len(classes) > 1:
        raise TypeError(f"list mixes values that cannot be compared: {sorted(classes)}")


def is_sorted(items: Sequence[Any]) -> bool:
    _check_comparable(items)
    return all(items[i] <= items[i + 1] for i in range(len(items) - 1))


def list_sum(items: Sequence[Any]) -> Any:
    if not items:
        return 0
    kinds = {kind_of(item) for item in items}
    if len(kinds) > 1 or not kinds <= (_NUMERIC | {"duration"}):
        raise TypeError(f"sum needs numbers or durations of one type, got {sorted(kinds)}")
    start = datetime.timedelta(0) if kinds == {"duration"} else 0
    return functools.reduce(lambda a, b: a + b, items, start)


def _extreme(items: Sequence[Any], name: str, pick: Any) -> Any:
    if not items:
        raise ValueError(f"{name} called on empty list")
    _check_comparable(items)
    return pick(items)


def list_slice(items: Sequence[Any], start: int, end: int) -> list[Any]:
    if start < 0 or end < 0:
        raise IndexError(f"cannot slice({start}, {end}), negative indexes not supported")
    if start > end:
        raise IndexError(f"cannot slice({start}, {end}), start index must be less than or equal to end index")
    if end > len(items):
        raise IndexError(f"cannot slice({start}, {end}), list is length {len(items)}")
    return list(items[start:end])


def flatten(items: Sequence[Any], depth: int = 1) -> list[Any]:
    if depth < 0:
        raise ValueError("level must be non-negative")
    out: list[Any] = []
    for item in items:
        if isinstance(item, list) and depth > 0:
            out.extend(flatten(item, depth - 1))
        else:
            out.append(item)
    return out


def sort(items: Sequence[Any]) -> list[Any]:
    _check_comparable(items)
    return sorted(items)


def distinct(items: Sequence[Any]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if not any(cel_equal(item, seen) for seen in out):
            out.append(item)
    return out


def list_range(count: int) -> list[int]:
    if count > 10_000:  # the comprehension budget: a longer range could never be iterated anyway
        raise ValueError("lists.range: at most 10000 elements")
    return list(range(max(count, 0)))


def _contains(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return all(any(cel_equal(x, y) for y in a) for x in b)


def _intersects(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return any(any(cel_equal(x, y) for y in a) for x in b)


@functools.lru_cache(maxsize=512)
def _regex(pattern: str) -> Any:
    try:
        return compile_linear(pattern)  # RE2, as Kubernetes' find/findAll: never backtracks
    except re.error as exc:
        raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None


def find(text: str, pattern: str) -> str:
    match = _regex(pattern).search(text)
    return match.group(0) if match else ""


def find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    if limit == 0:
        return []
    found = [m.group(0) for m in _regex(pattern).finditer(text)]
    return found if limit < 0 else found[:limit]


LISTS = Library("lists", (
    method("isSorted", ["list"], "bool", is_sorted),
    method("sum", ["list"], "dyn", list_sum),
    method("min", ["list"], "dyn", lambda items: _extreme(items, "min", min)),
    method("max", ["list"], "dyn", lambda items: _extreme(items, "max", max)),
    method("slice", ["list", "int", "int"], "list", list_slice),
    method("flatten", ["list"], "list", flatten),
    method("flatten", ["list", "int"], "list", flatten),
    method("sort", ["list"], "list", sort),
    method("distinct", ["list"], "list", distinct),
    fn("lists.range", ["int"], "list", list_range),
))

SETS = Library("sets", (
    fn("sets.contains", ["list", "list"], "bool", _contains),
    fn("sets.equivalent", ["list", "list"], "bool", lambda a, b: _contains(a, b) and _contains(b, a)),
    fn("sets.intersects", ["list", "list"], "bool", _intersects),
))

REGEX = Library("regex", (
    method("find", ["string", "string"], "string", find),
    method("findAll", ["string", "string"], "list", find_all),
    method("findAll", ["string", "string", "int"], "list", find_all),
))
