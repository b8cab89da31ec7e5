"""RFC 6902 JSON Patch between an original object and its mutated copy, with RFC 6901 escaped paths.

Only add, remove and replace are emitted, in an order that applies cleanly to the original: a list
that changed other than by appending is replaced whole, so no index ever points at a shifted element.
"""

from __future__ import annotations

from operator import is_
from typing import Any

import orjson


_ABSENT = object()


def escape(token: Any) -> str:
    """RFC 6901: '~' first, then '/' (nvidia.com/gpu becomes nvidia.com~1gpu). A token that is not text (a YAML
    key) fails with AttributeError, compiled or not (typed str, the compiled module would raise TypeError)."""
    if type(token) is str and "~" not in token and "/" not in token:
        return token  # most keys: nothing to escape
    return token.replace("~", "~0").replace("/", "~1")


def pointer(*tokens: str | int) -> str:
    return "".join("/" + escape(str(t)) for t in tokens)


def diff(original: Any, mutated: Any, path: str = "") -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    _diff(original, mutated, path, ops)
    return ops


def _diff(original: Any, mutated: Any, path: str, ops: list[dict[str, Any]]) -> None:
    """Appends to `ops`. Children that are the very same object are skipped before their path is built:
    mutators copy on write, so most of a mutated pod is shared with the original."""
    if original is mutated:
        return
    kind = type(original)
    # equal as JSON: most of a mutated pod is unchanged, compared in C, not walked in Python; `==` says no
    # fast, and when it says yes the serialized forms must match too
    if kind is type(mutated) and (kind is dict or kind is list) and original == mutated and _same_json(original, mutated):
        return
    if isinstance(original, dict) and isinstance(mutated, dict):
        if not original.keys() <= mutated.keys():  # (decided in C) some key is gone: in the original's order
            for key in original:
                if key not in mutated:
                    ops.append({"op": "remove", "path": f"{path}/{escape(key)}"})
        get = original.get
        for key, value in mutated.items():
            before = get(key, _ABSENT)
            if before is _ABSENT:
                ops.append({"op": "add", "path": f"{path}/{escape(key)}", "value": value})
                continue
            if before is not value:
                _diff(before, value, f"{path}/{escape(key)}", ops)
            elif type(key) is not str:
                escape(key)  # a key that is no text fails here, shared or not, as it always did
        return
    if isinstance(original, list) and isinstance(mutated, list):
        count = len(original)
        if len(mutated) >= count and (_shared_prefix(original, mutated)
                                      or all(_same(a, b) for a, b in zip(original, mutated))):
            ops.extend({"op": "add", "path": f"{path}/-", "value": v} for v in mutated[count:])
            return
        if len(mutated) == count:
            for i, (a, b) in enumerate(zip(original, mutated)):
                if a is not b:
                    _diff(a, b, f"{path}/{i}", ops)
            return
        ops.append({"op": "replace", "path": path, "value": mutated})
        return
    if _same(original, mutated):
        return
    ops.append({"op": "replace", "path": path, "value": mutated})


def _same_json(a: Any, b: Any) -> bool:
    """Of two == maps or lists of one type: are they the same JSON? (1, 1.0 and true are == in Python)"""
    try:
        return orjson.dumps(a) == orjson.dumps(b)
    except TypeError:  # not plain JSON (a YAML datetime): walk it
        return False


def _shared_prefix(original: list[Any], mutated: list[Any]) -> bool:
    """Each element of `original` is the very object at its place in `mutated` (copy on write keeps
    them so), decided in C: then each pair is `_same`, because equality is reflexive for every JSON
    value but a float NaN, so a list holding a float is left to the element-wise check."""
    return all(map(is_, original, mutated)) and float not in map(type, original)


def _same(a: Any, b: Any) -> bool:
    # bool is an int in Python; JSON tells them apart, so must we
    return type(a) is type(b) and a == b
