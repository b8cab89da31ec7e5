"""Give back the references to None that cel-expr-python's `Value.plain_value()` takes.

cel-expr-python 0.1.x returns every null of a result as Python's None without counting the reference it
hands over: each None in a result costs None one reference (`null`, `[null, 1]`, `{'a': null}`, an
object with `creationTimestamp: null` returned by a variable). On CPython before 3.12 None is an ordinary
object: after enough such results its count reaches zero and the interpreter aborts ("Fatal Python
error: none_dealloc"), a server process after some thousands of requests. Converting values INTO the
runtime and passing nulls to our Python functions do not lose references (measured).

So the loss is measured once per process on a result with known nulls (zero where the runtime does not
lose them, or where None is immortal, CPython 3.12+) and, where it is lost, each result's Nones are
counted and their references given back. Giving back too many is harmless (None is never freed), too
few is the abort: any loss measured counts as one per null.
"""

from __future__ import annotations

import ctypes
import sys
from itertools import repeat
from operator import is_
from typing import Any, Mapping

_incref = ctypes.pythonapi.Py_IncRef
_incref.argtypes = [ctypes.c_void_p]  # the address itself: ctypes would pass None as a NULL pointer
_incref.restype = None
_NONE_ADDRESS = id(None)
_PROBE = "[null, null, null, null]"


def give_back(count: int) -> None:
    for _ in range(count):
        _incref(_NONE_ADDRESS)


def _cycle_loss(program: Any, rounds: int) -> int:
    """References to None lost by `rounds` evaluations whose results are converted and dropped."""
    before = sys.getrefcount(None)
    for _ in range(rounds):
        value = program.eval(data={})
        result = value.plain_value()
        del result, value  # the loss shows when the result (held by the value too) is freed
    return before - sys.getrefcount(None)


def lost_per_null(env: Any) -> int:
    """1 when `plain_value()` loses None's references in this process, else 0 (see the module docstring)."""
    rounds, nulls = 8, _PROBE.count("null")
    with_nulls = _cycle_loss(env.compile(_PROBE), rounds)
    without = _cycle_loss(env.compile(_PROBE.replace("null", "1")), rounds)
    if with_nulls > 0:
        give_back(with_nulls)
    return 1 if with_nulls - without > rounds * nulls // 2 else 0


_LEAVES = frozenset({bool, int, float, str, bytes, type(None)})


def nones(value: Any) -> int:
    """How many Nones `value` (a result of plain_value: scalars, lists, dicts) holds."""
    kind = type(value)
    if kind in _LEAVES:
        return 1 if value is None else 0
    if kind is list or kind is tuple:
        try:
            count = value.count(None)
        except TypeError:  # a CEL type value's __eq__ refuses None: count by identity
            count = sum(map(is_, value, repeat(None)))
        for item in value:
            if type(item) not in _LEAVES:
                count += nones(item)
        return count
    if kind is dict or isinstance(value, Mapping):
        return sum(nones(item) for item in value.values())
    return 0
