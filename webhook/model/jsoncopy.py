"""A deep copy for JSON-shaped values (dicts, lists, scalars), several times faster than copy.deepcopy.

Admission objects come from JSON (or YAML of the same shape): no cycles, no custom classes. Anything
else (a tuple, a datetime from a YAML state file) is handed to copy.deepcopy, so the result is always
a deep copy. Shared sub-objects (YAML aliases) become separate copies, which only matters to code
that compares identities.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any, Callable

import orjson

# a frozenset: `type(x) in` hashes once instead of comparing with each member in turn (dicts and lists,
# the values that are not scalars, went through all five)
_SCALARS = frozenset((str, int, float, bool, type(None)))


def clone(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {key: item if type(item) in _SCALARS else clone(item) for key, item in value.items()}
    if kind is list:
        return [item if type(item) in _SCALARS else clone(item) for item in value]
    if kind in _SCALARS:
        return value
    return copy.deepcopy(value)


def copier(value: Any) -> Callable[[], Any]:
    """A function returning a fresh clone(value) at each call, for a value copied many times and never
    edited (a policy's frozen sidecar, a static template tree). The walk is done once, here: each call
    copies every map and list in C (dict.copy keeps the key order) and then replaces only the entries that
    are maps or lists themselves, without looking at the scalars again."""
    kind = type(value)
    if kind is dict or kind is list:
        inner = tuple((key, copier(item)) for key, item in (value.items() if kind is dict else enumerate(value))
                      if type(item) not in _SCALARS)
        if not inner:
            return value.copy
        return lambda: _filled(value.copy(), inner)
    if kind in _SCALARS:
        return lambda: value
    return lambda: copy.deepcopy(value)  # as clone does with anything that is not JSON


def _filled(out: Any, inner: tuple[tuple[Any, Callable[[], Any]], ...]) -> Any:
    for key, make in inner:
        out[key] = make()
    return out


class Sharer:
    """Makes equal JSON subtrees one object, for data that is parsed for us and never edited in place.

    50,000 stored pods repeat most of themselves (tolerations, volumes, probes, status conditions,
    images): sharing those subtrees brings the standalone state's memory down several times. Top down:
    a subtree seen before (compared by its serialized form, in C) is replaced whole without being
    walked; only the parts that differ are visited. Objects are edited in place (they are ours). Keep
    one Sharer for one load and drop it after.
    """

    def __init__(self) -> None:
        self._seen: dict[bytes, Any] = {}

    def __call__(self, value: Any) -> Any:
        """One object: its fields are shared, not the object itself nor its metadata (the store writes
        uid and resourceVersion there), though the metadata's labels and annotations are."""
        if type(value) is dict:
            for key, item in value.items():
                value[key] = self(item) if key == "metadata" else self._share(item)
        return value

    def _share(self, value: Any) -> Any:
        kind = type(value)
        if kind is not dict and kind is not list:
            return value
        try:
            text = orjson.dumps(value)
        except TypeError:  # not plain JSON (a YAML datetime): kept as it is
            return value
        key = text if len(text) <= 64 else hashlib.blake2b(text, digest_size=16).digest()
        seen = self._seen.get(key)
        if seen is not None:
            return seen
        if kind is dict:
            for name, item in value.items():
                value[name] = self._share(item)
        else:
            for index, item in enumerate(value):
                value[index] = self._share(item)
        self._seen[key] = value
        return value
