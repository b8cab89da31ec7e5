"""The operations a CEL expression compiled to Python (webhook.cel.to_python) calls, and its Refused.

Each is strict: it returns CEL's value only where CEL gives that very value (same-typed operands, int64 range,
dict fields, list elements) and raises `Refused` wherever CEL could give anything else, so the caller evaluates
on the runtime instead. Lists, strings and comparisons built or scanned charge one budget per evaluation
(`_charge`): past it, `Refused`. `HELPERS` is the namespace the generated module runs in.
"""

from __future__ import annotations

from typing import Any

BUDGET = 10_000  # iterations and list or string elements built, per evaluation
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


class Refused(Exception):
    """This evaluation cannot say what CEL says: the caller evaluates on the runtime."""


_NONE: Any = type("OptionalNone", (), {"__repr__": lambda self: "optional.none()"})()
# an element of a joined program's value that this module could not tell (never a value of CEL's own)
NOT_TOLD: Any = _NONE


# --- the helpers the generated code calls ----------------------------------------------------------
def _truth(value: Any) -> bool:
    if type(value) is not bool:
        raise Refused
    return value


def _int64(value: int) -> int:
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise Refused
    return value




def _eq(budget: list[int], a: Any, b: Any) -> bool:
    kind = type(a)
    if kind is type(b):
        if kind is str or kind is bool or kind is float or a is None:
            return a == b
        if kind is int:
            return _int64(a) == _int64(b)
        if kind is list:  # CEL's equality is never an error: a first pair that differs settles it
            if len(a) != len(b):
                return False
            _charge(budget, len(a))  # element by element, here and below: the budget bounds it
            for x, y in zip(a, b):
                if not _eq(budget, x, y):
                    return False
            return True
        if kind is dict:
            if len(a) != len(b):
                return False
            _charge(budget, len(a))
            for key, x in a.items():
                if type(key) is not str:
                    raise Refused
                if key not in b or not _eq(budget, x, b[key]):
                    return False
            return True
    raise Refused


def _order(a: Any, b: Any) -> tuple[Any, Any]:
    kind = type(a)
    if kind is type(b):
        if kind is str or kind is float or kind is bool:
            return a, b
        if kind is int:
            return _int64(a), _int64(b)
    raise Refused


def _lt(a: Any, b: Any) -> bool:
    x, y = _order(a, b)
    return x < y


def _le(a: Any, b: Any) -> bool:
    x, y = _order(a, b)
    return x <= y


def _gt(a: Any, b: Any) -> bool:
    x, y = _order(a, b)
    return x > y


def _ge(a: Any, b: Any) -> bool:
    x, y = _order(a, b)
    return x >= y


def _add(budget: list[int], a: Any, b: Any) -> Any:
    kind = type(a)
    if kind is type(b):
        if kind is int:
            return _int64(_int64(a) + _int64(b))
        if kind is float:
            return a + b
        if kind is str or kind is list:
            _charge(budget, len(a) + len(b))
            return a + b
    raise Refused


def _sub(a: Any, b: Any) -> Any:
    kind = type(a)
    if kind is type(b):
        if kind is int:
            return _int64(_int64(a) - _int64(b))
        if kind is float:
            return a - b
    raise Refused


def _mul(a: Any, b: Any) -> Any:
    kind = type(a)
    if kind is type(b):
        if kind is int:
            return _int64(_int64(a) * _int64(b))
        if kind is float:
            return a * b
    raise Refused


def _neg(a: Any) -> Any:
    kind = type(a)
    if kind is int:
        return _int64(-_int64(a))
    if kind is float:
        return -a
    raise Refused


def _index(container: Any, key: Any) -> Any:
    kind = type(container)
    if kind is list and type(key) is int:
        if 0 <= key < len(container):
            return container[key]
    elif kind is dict and type(key) is str:
        if key in container:
            return container[key]
    raise Refused


def _size(value: Any) -> int:
    kind = type(value)
    if kind is str or kind is list or kind is dict:
        return len(value)
    raise Refused


def _in(budget: list[int], value: Any, container: Any) -> bool:
    kind = type(container)
    if kind is list:
        _charge(budget, len(container))
        for element in container:
            if _eq(budget, value, element):
                return True
        return False
    if kind is dict and type(value) is str:
        return value in container
    raise Refused


def _in_strings(value: Any, strings: frozenset[str]) -> bool:
    """`value in [...]` of a literal list of strings: a string is in it or not, anything else is the runtime's."""
    if type(value) is not str:
        raise Refused
    return value in strings


def _optional_index(container: Any, key: Any) -> Any:
    """`container[?key]` of a value that is no optional: the element, or _NONE (an index or key of the wrong
    type is the runtime's to judge)."""
    kind = type(container)
    if kind is list and type(key) is int and key >= 0:
        return container[key] if key < len(container) else _NONE
    if kind is dict and type(key) is str:
        return container.get(key, _NONE)
    raise Refused


def _optional_index_chain(optional: Any, key: Any) -> Any:
    if optional is _NONE:
        return _NONE
    return _optional_index(optional, key)


def _value(optional: Any) -> Any:
    if optional is _NONE:
        raise Refused
    return optional


def _strings(a: Any, b: Any) -> tuple[str, str]:
    if type(a) is not str or type(b) is not str:
        raise Refused
    return a, b


def _contains(a: Any, b: Any) -> bool:
    text, part = _strings(a, b)
    return part in text


def _starts_with(a: Any, b: Any) -> bool:
    text, part = _strings(a, b)
    return text.startswith(part)


def _ends_with(a: Any, b: Any) -> bool:
    text, part = _strings(a, b)
    return text.endswith(part)


def _indexes(budget: list[int], value: Any) -> list[int]:
    """A list's indexes, what a two-variable comprehension over it ranges over (webhook.cel.comprehensions);
    a map's keys are refused (CEL's order of them need not be Python's)."""
    if type(value) is not list:
        raise Refused
    _charge(budget, len(value))
    return list(range(len(value)))


def _refuse(*_: Any) -> Any:
    """A function whose every call is an error (the runtime's guard of long map/filter ranges): the runtime's."""
    raise Refused


def _charge(budget: list[int], count: int) -> None:
    budget[0] -= count
    if budget[0] < 0:
        raise Refused


HELPERS: dict[str, Any] = {name: value for name, value in globals().items()
                            if name.startswith("_") and callable(value) and not isinstance(value, type)}
HELPERS["_NONE"] = _NONE
