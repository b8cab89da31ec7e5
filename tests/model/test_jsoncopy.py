"""jsoncopy: clone is a deep copy of JSON-shaped values; copier(value)() is clone(value), value for value,
type for type and key order for key order, with no map or list shared with the value or another copy."""

from __future__ import annotations

import copy
import datetime
from typing import Any

from hypothesis import given, settings, strategies as st

from webhook.model.jsoncopy import clone, copier

_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5))
_json = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                      st.dictionaries(st.text(max_size=4), inner, max_size=4)),
                     max_leaves=30)
# what clone hands to copy.deepcopy: tuples, a YAML date, a str subclass
_odd = st.one_of(st.tuples(st.integers(), st.lists(st.integers(), max_size=2)), st.just(datetime.date(2026, 1, 2)),
                 st.builds(type("Sub", (str,), {}), st.text(max_size=3)))
_mixed = st.recursive(st.one_of(_scalars, _odd), lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)), max_leaves=20)


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def _containers(value: Any) -> list[Any]:
    if type(value) is dict:
        return [value, *(c for v in value.values() for c in _containers(v))]
    if type(value) in (list, tuple):
        return [value, *(c for v in value for c in _containers(v))]
    return []


def _shares_nothing(a: Any, b: Any) -> bool:
    ids = {id(c) for c in _containers(a) if type(c) is not tuple or _containers(c)[1:]}
    return not any(id(c) in ids for c in _containers(b) if type(c) is not tuple)


@settings(max_examples=300, deadline=None)
@given(_json)
def test_copier_makes_what_clone_makes(value: Any) -> None:
    before = copy.deepcopy(value)
    make = copier(value)
    first, second = make(), make()
    for made in (first, second):
        assert _same(made, clone(value))
        assert _shares_nothing(value, made)
    assert _shares_nothing(first, second)
    first_again = clone(first)
    if type(first) in (dict, list):  # editing one copy changes neither the value nor the next copy
        first.clear()
    assert _same(value, before) and _same(make(), first_again)


@settings(max_examples=200, deadline=None)
@given(_mixed)
def test_copier_deep_copies_what_is_not_json_as_clone_does(value: Any) -> None:
    made = copier(value)()
    assert _same(made, clone(value))
    assert _same(made, copy.deepcopy(value))
    assert _shares_nothing(value, made)


def test_nested_shared_subtree_becomes_separate_copies() -> None:
    shared = {"a": [1, 2]}
    value = {"x": shared, "y": shared}
    made = copier(value)()
    assert made == value and made["x"] is not made["y"] and made["x"]["a"] is not made["y"]["a"]
