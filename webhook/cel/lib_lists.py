"""Kubernetes lists, sets and regex libraries, cel-go's list extension (slice, flatten, sort...) and cel-go's
regex extension (`regex.replace`, `regex.extractAll`), which Kyverno adds to its CEL environment."""

from __future__ import annotations

import datetime
import functools
import re
from typing import Any, Iterator, Sequence

from webhook.cel import cost
from webhook.cel.functions import Library, fn, method
from webhook.cel.lib_strings import cel_equal
from webhook.cel.values import describe, kind_of
from webhook.model.regex import compile_linear, go_matches

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
            cost.charge(len(item), "flatten")  # each nested element is one more to copy
            out.extend(flatten(item, depth - 1))
        else:
            out.append(item)
    return out


def sort(items: Sequence[Any]) -> list[Any]:
    """cel-go's sort wants elements of one type (`[1, 2.0].sort()` is an error, unlike min/max)."""
    if len({kind_of(item) for item in items}) > 1:
        raise TypeError("list elements must have the same type")
    _check_comparable(items)
    return sorted(items)


def sort_by(items: Sequence[Any], keys: Sequence[Any]) -> list[Any]:
    """lists v3's `sortBy` (cel-go's @sortByAssociatedKeys): `items` in the order of their `keys`, which must be
    of one comparable type (webhook.cel.comprehensions writes `R.sortBy(x, k)` as this of R and R.map(x, k))."""
    if len(items) != len(keys):
        raise ValueError(f"sortBy: {len(items)} elements and {len(keys)} keys")
    if len({kind_of(key) for key in keys}) > 1:
        raise TypeError("list elements must have the same type")
    _check_comparable(keys)
    order = sorted(range(len(items)), key=lambda i: keys[i])
    return [items[i] for i in order]


def comprehension_keys(value: Any) -> list[Any]:
    """What a two-variable comprehension ranges over (webhook.cel.comprehensions): a list's indexes, a map's keys."""
    return list(range(len(value))) if isinstance(value, list) else list(value)


def comprehension_pairs(value: Any) -> list[list[Any]]:
    """`[key, value]` for each entry of a map, `[index, element]` for each element of a list."""
    items = enumerate(value) if isinstance(value, list) else value.items()
    return [[key, item] for key, item in items]


def merge_entries(maps: Sequence[Any]) -> dict[Any, Any]:
    """transformMap and transformMapEntry: the entries of `maps`, one map; a key given twice is an error, as
    cel-go's map insertion makes it."""
    merged: dict[Any, Any] = {}
    for entry in maps:
        if not isinstance(entry, dict):
            raise TypeError(f"transformMapEntry: expected a map, got {kind_of(entry)}")
        for key, value in entry.items():
            if key in merged:
                raise ValueError(f"insert failed: key {key} already exists")
            merged[key] = value
    return merged


_HASHED = {"string": "string", "bytes": "bytes", "bool": "bool", "null": "null", "int": "number", "uint": "number",
           "double": "number"}


def _distinct_key(item: Any) -> tuple[str, Any] | None:
    """A key equal for exactly the values CEL's == finds equal (numbers across types); None where there is none
    (lists, maps, a NaN, which equals nothing)."""
    kind = _HASHED.get(kind_of(item))
    if kind is None or (kind == "number" and item != item):
        return None
    return kind, item


def distinct(items: Sequence[Any]) -> list[Any]:
    """Charged as cel-go's algorithm costs (each element against those kept: `_distinct_cost`), so a policy within
    Kubernetes' budget is within ours; scalars are told apart by hashing, the rest pairwise."""
    keys = [_distinct_key(item) for item in items]
    if None not in keys:
        seen: set[tuple[str, Any]] = set()
        kept = []
        for item, key in zip(items, keys):
            if key not in seen:
                seen.add(key)  # type: ignore[arg-type]
                kept.append(item)
        return kept
    out: list[Any] = []
    for item in items:
        if not any(cel_equal(item, seen) for seen in out):
            out.append(item)
    return out


def list_range(count: int) -> list[int]:
    if count > 10_000:  # the comprehension budget: a longer range could never be iterated anyway
        raise ValueError("lists.range: at most 10000 elements")
    cost.result_size(max(count, 0), "lists.range", per_element=1.0)
    return list(range(max(count, 0)))


def _distinct_cost(items: Sequence[Any]) -> float:
    """Every element against every other (a list of 8,000 held the event loop for a minute)."""
    return cost.inputs(items) + len(items) * (len(items) - 1) / 2


def _sort_cost(items: Sequence[Any]) -> float:
    return cost.inputs(items) + len(items) * max(1, len(items).bit_length())


def _contains(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return all(any(cel_equal(x, y) for y in a) for x in b)


def _intersects(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return any(any(cel_equal(x, y) for y in a) for x in b)


def _regex(pattern: str) -> Any:
    """compile_linear's pattern (cached there), its error in CEL's words."""
    try:
        return compile_linear(pattern)  # RE2, as Kubernetes' find/findAll: never backtracks
    except re.error as exc:
        raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None


def _regex_cost(text: str, pattern: str, *_: Any) -> float:
    return cost.regex(text, pattern)


def _matches(compiled: Any, text: str, what: str, limit: int = -1) -> Iterator[Any]:
    """go_matches, each match charged as an element of the result before it is made (a findAll of a 1 MB
    text held the event loop for the better part of a minute building a million strings); at most `limit` when it
    is not negative."""
    for count, match in enumerate(go_matches(compiled, text)):
        if count == limit:
            return
        cost.charge(cost.MATCH + (match.end() - match.start()) * cost.STRING_TRAVERSAL, what)
        yield match


def find(text: str, pattern: str) -> str:
    match = _regex(pattern).search(text)
    return match.group(0) if match else ""


def find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    if limit == 0:
        return []
    return [m.group(0) for m in _matches(_regex(pattern), text, "findAll", limit)]  # Go's FindAllString


def _expand(match: re.Match[str], replacement: str, groups: int) -> str:
    """cel-go's replacement syntax: `\\N` (one digit) is group N, `\\\\` a backslash, any other escape an error."""
    out: list[str] = []
    chars = iter(replacement)
    for ch in chars:
        if ch != "\\":
            out.append(ch)
            continue
        nxt = next(chars, None)
        if nxt is None:
            raise ValueError(f"invalid replacement string: {replacement!r} \\ not allowed at end")
        if nxt == "\\":
            out.append(nxt)
            continue
        if not ("0" <= nxt <= "9"):
            raise ValueError(f"invalid replacement string: {replacement!r} \\ must be followed by a digit or \\")
        if int(nxt) > groups:
            raise ValueError(f"replacement string references group {nxt} but regex has only {groups} group(s)")
        out.append(match.group(int(nxt)) or "")
    return "".join(out)


def regex_replace(text: str, pattern: str, replacement: str, count: int = -1) -> str:
    if count == 0:  # cel-go returns before compiling the pattern
        return text
    compiled = _regex(pattern)
    out: list[str] = []
    last = length = 0
    for match in _matches(compiled, text, "regex.replace", count if count > 0 else -1):
        expanded = _expand(match, replacement, compiled.groups)
        length += match.start() - last + len(expanded)
        cost.refuse_beyond(length + len(text) - match.end(), "regex.replace")  # the result, before it grows
        cost.charge(len(expanded) * cost.STRING_TRAVERSAL, "regex.replace")
        out.append(text[last:match.start()])
        out.append(expanded)
        last = match.end()
    out.append(text[last:])
    return "".join(out)


def _single_group(pattern: str) -> re.Pattern[str]:
    compiled = _regex(pattern)
    if compiled.groups > 1:
        raise ValueError(f"regular expression has more than one capturing group: {pattern!r}")
    return compiled


def regex_extract(text: str, pattern: str) -> list[str]:
    """`regex.extract` as a list of at most one element (the optional it stands for): the first match, or
    its group; none when nothing matches or the group is empty."""
    compiled = _single_group(pattern)
    match = compiled.search(text)
    if match is None:
        return []
    found = match.group(1) if compiled.groups else match.group(0)
    return [found] if found or not compiled.groups else []


def regex_extract_all(text: str, pattern: str) -> list[str]:
    compiled = _single_group(pattern)
    matches = list(_matches(compiled, text, "regex.extractAll"))
    if compiled.groups == 0:
        return [m.group(0) for m in matches]
    return [m.group(1) for m in matches if m.group(1)]


LISTS = Library("lists", (
    method("isSorted", ["list"], "bool", is_sorted),
    method("sum", ["list"], "dyn", list_sum),
    method("min", ["list"], "dyn", lambda items: _extreme(items, "min", min)),
    method("max", ["list"], "dyn", lambda items: _extreme(items, "max", max)),
    method("slice", ["list", "int", "int"], "list", list_slice),
    method("flatten", ["list"], "list", flatten),
    method("flatten", ["list", "int"], "list", flatten),
    method("sort", ["list"], "list", sort, _sort_cost),
    method("distinct", ["list"], "list", distinct, _distinct_cost),
    fn("lists.range", ["int"], "list", list_range),
    fn("__qm_sort_by", ["list", "list"], "list", sort_by, lambda a, b: _sort_cost(b)),
    # charged one unit: the comprehension ranging over the keys is charged per element, as cel-go charges it
    fn("__qm_keys", ["list"], "list(int)", comprehension_keys, lambda _: 1),
    fn("__qm_keys", ["map"], "list", comprehension_keys, lambda _: 1),
    fn("__qm_pairs", ["list"], "list", comprehension_pairs, lambda _: 1),
    fn("__qm_pairs", ["map"], "list", comprehension_pairs, lambda _: 1),
    # per map merged: the entries were built (and charged) by the comprehension that made the list
    fn("__qm_merge", ["list"], "map", merge_entries, lambda maps: 1 + len(maps)),
))

SETS = Library("sets", (
    fn("sets.contains", ["list", "list"], "bool", _contains, lambda a, b: cost.pairs(len(a), len(b))),
    fn("sets.equivalent", ["list", "list"], "bool", lambda a, b: _contains(a, b) and _contains(b, a),
       lambda a, b: 2 * cost.pairs(len(a), len(b))),
    fn("sets.intersects", ["list", "list"], "bool", _intersects, lambda a, b: cost.pairs(len(a), len(b))),
))

REGEX = Library("regex", (
    method("find", ["string", "string"], "string", find, _regex_cost),
    method("findAll", ["string", "string"], "list", find_all, _regex_cost),
    method("findAll", ["string", "string", "int"], "list", find_all, _regex_cost),
))

# cel-go's ext.Regex; `regex.extract` returns an optional, which a Python function cannot: its calls are
# routed through `__qm_regex_extract` (a list of at most one element), so it needs optional syntax
REGEX_EXT = Library("regex-ext", (
    fn("regex.replace", ["string", "string", "string"], "string", regex_replace, _regex_cost),
    fn("regex.replace", ["string", "string", "string", "int"], "string", regex_replace, _regex_cost),
    fn("regex.extractAll", ["string", "string"], "list", regex_extract_all, _regex_cost),
    fn("__qm_regex_extract", ["string", "string"], "list", regex_extract, _regex_cost),
), optional_results=(("regex.extract", "__qm_regex_extract"),))
