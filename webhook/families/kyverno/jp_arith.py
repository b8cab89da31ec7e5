"""Kyverno's arithmetic JMESPath functions: numbers, quantities ("2Gi") and durations ("1h") as operands."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from webhook.model.quantity import parse_quantity

from .gotypes import is_number, parse_duration
from .jp_time import format_duration


class ArithmeticError_(ValueError):
    pass


def operand(value: Any) -> tuple[str, Any]:
    if is_number(value):
        return "scalar", Fraction(value)
    if isinstance(value, str):
        try:
            return "quantity", (parse_quantity(value), _binary(value))
        except ValueError:
            pass
        try:
            return "duration", parse_duration(value)
        except ValueError:
            pass
    raise ArithmeticError_(f"invalid operand {value!r}")


def _binary(text: str) -> bool:
    return text.strip().endswith("i")


def format_quantity(amount: Fraction, binary: bool) -> str:
    """Kubernetes' canonical quantity text for the result (binary suffixes when the input used them)."""
    if amount == 0:
        return "0"
    sign = "-" if amount < 0 else ""
    amount = abs(amount)
    if binary and amount.denominator == 1:
        for suffix, size in (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if amount % size == 0:
                return f"{sign}{amount // size}{suffix}"
    for suffix, size in (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3),
                         ("", 1), ("m", Fraction(1, 1000)), ("u", Fraction(1, 10**6)), ("n", Fraction(1, 10**9))):
        scaled = amount / size
        if scaled.denominator == 1:
            return f"{sign}{scaled.numerator}{suffix}"
    return f"{sign}{math.ceil(amount * 10**9)}n"


def _number(value: Fraction) -> float | int:
    return int(value) if value.denominator == 1 else float(value)


def add(left: Any, right: Any) -> Any:
    return _additive(left, right, 1, "add")


def subtract(left: Any, right: Any) -> Any:
    return _additive(left, right, -1, "subtract")


def _additive(left: Any, right: Any, sign: int, name: str) -> Any:
    (lk, lv), (rk, rv) = operand(left), operand(right)
    if lk != rk:
        raise ArithmeticError_(f"{name}: types mismatch")
    if lk == "scalar":
        return _number(lv + sign * rv)
    if lk == "duration":
        return format_duration(lv + sign * rv)
    return format_quantity(lv[0] + sign * rv[0], lv[1])


def multiply(left: Any, right: Any) -> Any:
    (lk, lv), (rk, rv) = operand(left), operand(right)
    if lk == "scalar" and rk != "scalar":
        (lk, lv), (rk, rv) = (rk, rv), (lk, lv)
    if rk != "scalar":
        raise ArithmeticError_("multiply: types mismatch")
    if lk == "scalar":
        return _number(lv * rv)
    if lk == "duration":
        return format_duration(int(lv * rv))
    return format_quantity(lv[0] * rv, lv[1])


def divide(left: Any, right: Any) -> Any:
    (lk, lv), (rk, rv) = operand(left), operand(right)
    divisor = rv[0] if rk == "quantity" else rv
    if divisor == 0:
        raise ArithmeticError_("divide: Zero divisor passed")
    if lk == rk == "quantity":
        return float(lv[0] / rv[0])
    if lk == rk:
        return float(Fraction(lv) / Fraction(rv)) if lk == "duration" else _number(lv / rv)
    if rk != "scalar":
        raise ArithmeticError_("divide: types mismatch")
    if lk == "duration":
        return format_duration(int(lv / rv))
    return format_quantity(lv[0] / rv, lv[1])


def modulo(left: Any, right: Any) -> Any:
    (lk, lv), (rk, rv) = operand(left), operand(right)
    if lk != rk:
        raise ArithmeticError_("modulo: types mismatch")
    if lk == "duration":
        if rv == 0:
            raise ArithmeticError_("modulo: Zero divisor passed")
        return format_duration(int(math.fmod(lv, rv)))
    a, b = (lv[0], rv[0]) if lk == "quantity" else (lv, rv)
    if a.denominator != 1 or b.denominator != 1:
        raise ArithmeticError_("modulo: Non-integer argument(s) passed for modulo")
    if b == 0:
        raise ArithmeticError_("modulo: Zero divisor passed")
    result = int(math.fmod(int(a), int(b)))
    return format_quantity(Fraction(result), lv[1]) if lk == "quantity" else result


def total(values: list) -> Any:
    if not values:
        raise ArithmeticError_("sum: at least one element required")
    result = values[0]
    for value in values[1:]:
        result = add(result, value)
    return result
