"""Leaf comparison of one resource value with one pattern value (Kyverno pkg/engine/pattern).

Strings carry operators: ``a | b`` alternatives, ``a & b`` conjunctions, ``!v``, ``>v``, ``>=v``, ``<v``, ``<=v``,
ranges ``1-5`` and ``1!-5``; each side is compared as a duration, then a quantity, then a wildcard string.
"""

from __future__ import annotations

import math
import re
from typing import Any

from webhook.model.quantity import parse_quantity

from .gotypes import is_number, parse_duration, parse_float, parse_int, wildcard_match

_NUM = r"[-|+]?\d+(?:\.\d+)?[A-Za-z]*"
IN_RANGE = re.compile(rf"^({_NUM})-({_NUM})$")
NOT_IN_RANGE = re.compile(rf"^({_NUM})!-({_NUM})$")


def operator_of(pattern: str) -> str:
    """Kyverno's GetOperatorFromStringPattern: '' (equal), '>=', '<=', '>', '<', '!', '-' (range), '!-'."""
    if len(pattern) < 2:
        return ""
    for op in (">=", "<=", ">", "<"):
        if pattern.startswith(op):
            return op
    if pattern.startswith("!"):
        return "!"
    if NOT_IN_RANGE.match(pattern):
        return "!-"
    if IN_RANGE.match(pattern):
        return "-"
    return ""


def validate_value(value: Any, pattern: Any) -> bool:
    if isinstance(pattern, bool):
        return isinstance(value, bool) and value == pattern
    if isinstance(pattern, int):
        return _int_matches(value, pattern)
    if isinstance(pattern, float):
        return _float_matches(value, pattern)
    if pattern is None:
        return _nil_matches(value)
    if isinstance(pattern, dict):
        return isinstance(value, dict)  # maps only check existence here; their content is walked separately
    if isinstance(pattern, str):
        return _string_pattern_matches(value, pattern)
    return False


def _int_matches(value: Any, pattern: int) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value == pattern
    if isinstance(value, float):
        return value == math.trunc(value) and int(value) == pattern
    if isinstance(value, str):
        try:
            return parse_int(value) == pattern
        except ValueError:
            return False
    return False


def _float_matches(value: Any, pattern: float) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return pattern == math.trunc(pattern) and int(pattern) == value
    if isinstance(value, float):
        return value == pattern
    if isinstance(value, str):
        try:
            return parse_float(value) == pattern
        except ValueError:
            return False
    return False


def _nil_matches(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, bool):
        return not value
    if is_number(value):
        return value == 0
    if isinstance(value, str):
        return value == ""
    return False


def _string_pattern_matches(value: Any, pattern: str) -> bool:
    if value == pattern:
        return True
    if type(value) is str and literal_pattern(pattern):
        return False  # text that only stands for itself, compared with other text: equal or not
    for alternative in pattern.split("|"):
        if all(_single_matches(value, part.strip(" ")) for part in alternative.strip(" ").split("&")):
            return True
    return False


def literal_pattern(pattern: str) -> bool:
    """Does the pattern stand for itself alone: no alternative, conjunction, operator, range or wildcard,
    and neither a duration nor a quantity (those compare by value: "1Gi" matches "1024Mi")? Then a string
    matches it only when equal. Most patterns a policy substitutes (`{{ element.name }}`, an image, a
    label) are such text; deciding that costs a few C calls where the full reading parses it three ways.
    A letter first rules out every operator, range, number and duration; of quantities it leaves only a
    bare suffix (at most two letters: "Ki", "m") and an exponent ("e3", "E-2")."""
    return (len(pattern) > 2 and pattern[0].isalpha() and pattern[0] not in "eE" and not pattern[-1].isspace()
            and "|" not in pattern and "&" not in pattern and "*" not in pattern and "?" not in pattern)


def _single_matches(value: Any, pattern: str) -> bool:
    op = operator_of(pattern)
    if op == "-":
        left, right = IN_RANGE.match(pattern).groups()
        return _single_matches(value, f">= {left}") and _single_matches(value, f"<= {right}")
    if op == "!-":
        left, right = NOT_IN_RANGE.match(pattern).groups()
        return _single_matches(value, f"< {left}") or _single_matches(value, f"> {right}")
    return compare(value, pattern[len(op):].strip(), op)


def compare(value: Any, pattern: str, op: str) -> bool:
    """One operator applied as Kyverno does: duration first, then quantity, then (for = and !) wildcard string."""
    for attempt in (_compare_duration, _compare_quantity):
        result = attempt(value, pattern, op)
        if result is not None:
            return result
    return _compare_string(value, pattern, op)


def _number_text(value: Any) -> str | None:
    if value is None:
        return "0"
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return f"{value:f}"
    if isinstance(value, int):
        return str(value)
    return None


def _ordered(result: int, op: str) -> bool | None:
    return {"": result == 0, "!": result != 0, ">": result > 0, "<": result < 0,
            ">=": result >= 0, "<=": result <= 0}.get(op)


def _compare_duration(value: Any, pattern: str, op: str) -> bool | None:
    text = _number_text(value)
    try:
        expected, actual = parse_duration(pattern), parse_duration(text)
    except ValueError:
        return None
    return _ordered((actual > expected) - (actual < expected), op)


def _compare_quantity(value: Any, pattern: str, op: str) -> bool | None:
    text = _number_text(value)
    if text is None:
        return None
    try:
        expected, actual = parse_quantity(pattern), parse_quantity(text)
    except (ValueError, ZeroDivisionError):
        return None
    return _ordered((actual > expected) - (actual < expected), op)


def _compare_string(value: Any, pattern: str, op: str) -> bool:
    if op not in ("", "!"):
        return False  # >, <, >=, <= never apply to plain strings
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float):
        text = _go_float_e(value)
    elif isinstance(value, (int, str)):
        text = str(value)
    else:
        return False
    matched = wildcard_match(pattern, text)
    return not matched if op == "!" else matched


def _go_float_e(value: float) -> str:
    """strconv.FormatFloat(v, 'E', -1, 64), e.g. 1.5 -> '1.5E+00'."""
    mantissa, _, exponent = f"{value:E}".partition("E")
    shortest = repr(value / (10 ** int(exponent))) if value else "0"
    shortest = shortest.rstrip("0").rstrip(".") if "." in shortest else shortest
    sign = "-" if int(exponent) < 0 else "+"
    return f"{shortest}E{sign}{abs(int(exponent)):02d}"
