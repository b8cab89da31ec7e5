"""NUL characters (`\\u0000`) where a Python value enters the C++ runtime.

cel-expr-python 0.1.3 cuts a string, bytes value or map key at its first NUL when it converts a Python
value: an activation's values and the results of functions written in Python (tests/cel/test_runtime_nul.py
pins it). Values built inside the runtime (literals, `+`, `base64.decode`) and the runtime's results keep
theirs. So backend_cpp asks `contains_nul` of what it hands over and `results.seen` of what our functions
returned, and evaluates on the exact runtime when either says yes.
"""

from __future__ import annotations

import datetime
from typing import Any, Mapping

import orjson

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
    notebook pod in ~2 us, far less than a Python walk; the walk settles what orjson cannot write (keys
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

    __slots__ = ("seen",)

    def __init__(self) -> None:
        self.seen = 0


results = _Results()
