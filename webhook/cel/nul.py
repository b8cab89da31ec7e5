"""NUL characters (`\\u0000`) where a Python value enters the C++ runtime.

cel-expr-python 0.1.3 cuts a string, bytes value or map key at its first NUL when it converts a Python
value: an activation's values and the results of functions written in Python (tests/cel/test_runtime_nul.py
pins it). Values built inside the runtime (literals, `+`, `base64.decode`) and the runtime's results keep
theirs. So backend_cpp asks `contains_nul` of what it hands over and `results.seen` of what our functions
returned; on a NUL it reads the values with their strings wrapped (`wrap_strings`) or evaluates on the
exact runtime (docs/cel.md, NUL characters).
"""

from __future__ import annotations

import datetime
from typing import Any, Mapping

import orjson
from google.protobuf.wrappers_pb2 import StringValue

_ESCAPED = b"\\u0000"   # how orjson writes a NUL (a text holding a backslash and `u0000` reads alike: the walk decides)
_SCALARS = (int, float, bool, type(None))


def _other(value: Any) -> Any:
    """orjson's `default`: what it cannot write, written so that a NUL in it still shows."""
    if isinstance(value, (bytes, bytearray)):
        return "\0" if b"\0" in value else None
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, datetime.timedelta):
        return None
    raise TypeError  # anything else: the walk decides


def contains_nul(value: Any) -> bool:
    """Whether a NUL is in any string, bytes value or map key of `value`, at any depth. orjson writes a
    notebook pod in far less time than a Python walk takes; the walk settles what orjson cannot write (keys
    that are not strings, integers beyond 64 bits, nesting beyond its limit) and every hit."""
    try:
        text = orjson.dumps(value, default=_other)
    except TypeError:  # orjson.JSONEncodeError is one
        return _walk(value)
    # a backslash first: one memchr, where the search for the escape costs ~4 times as much
    return b"\\" in text and _ESCAPED in text and _walk(value)


def _walk(value: Any) -> bool:
    kind = type(value)
    if kind is str:
        return "\0" in value
    if kind is dict or isinstance(value, Mapping):
        for key, item in value.items():
            if _walk(key) or _walk(item):
                return True
        return False
    if kind is list or isinstance(value, (list, tuple)):
        for item in value:
            if _walk(item):
                return True
        return False
    if isinstance(value, (bytes, bytearray)):
        return b"\0" in value
    return isinstance(value, str) and "\0" in value


def result_has_nul(value: Any) -> bool:
    """`contains_nul` for the result of a function written in Python: mostly a scalar or a short string."""
    kind = type(value)
    if kind is str:
        return "\0" in value
    return kind not in _SCALARS and contains_nul(value)


class _Results:
    """How many results of our functions held a NUL since the process started. An evaluation compares
    it before and after: a change means the runtime saw a cut value (another thread's evaluation may
    change it too; that costs an exact evaluation, never a wrong answer)."""

    __slots__ = ("seen", "wrapping")

    def __init__(self) -> None:
        self.seen = 0
        self.wrapping = 0   # evaluations running on wrapped values (wrap_strings): our functions unwrap their arguments


results = _Results()


class Unwrappable(Exception):
    """A NUL in a map key or a bytes value: only the exact runtime reads those."""


def wrap_strings(value: Any) -> Any:
    """A copy of `value` whose strings holding a NUL are `google.protobuf.StringValue` messages: the C++
    runtime takes those whole and unwraps them into plain strings for its own operators, so the program
    reads the NUL. Our functions get them back as messages (`unwrap` undoes it). Raises Unwrappable where
    no wrapper helps (a key, bytes)."""
    kind = type(value)
    if kind is str:
        return StringValue(value=value) if "\0" in value else value
    if kind in _SCALARS:
        return value
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if _walk(key):
                raise Unwrappable()
            out[key] = wrap_strings(item)
        return out
    if isinstance(value, (list, tuple)):
        return [wrap_strings(item) for item in value]
    if _walk(value):  # bytes, str subclasses
        raise Unwrappable()
    return value


def unwrap(value: Any) -> Any:
    """`wrap_strings` undone, at any depth."""
    kind = type(value)
    if kind is StringValue:
        return value.value
    if kind is list or kind is tuple:
        return [unwrap(item) for item in value]
    if kind is dict:
        return {key: unwrap(item) for key, item in value.items()}
    return value
