"""Translate a Kyverno validation ``pattern`` into one CEL expression, where the translation is faithful.

Supported: plain keys (the key must exist), ``=(key)`` (checked only when present), ``X(key)`` (must be absent),
lists of maps (every element), and leaf values: literals, ``*`` (present), ``?*`` (non-empty), ``!v``,
wildcards, ``|``/``&``, and ``<``/``>``/``<=``/``>=`` on integers. Anything else (conditional, global,
existence anchors, quantities, durations, null patterns) raises Untranslatable with the reason.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .anchors import EQUALITY, NEGATION, parse_anchor
from .gotypes import contains_wildcard, is_duration
from .pattern_values import operator_of

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CEL_RESERVED = {"in", "as", "break", "const", "continue", "else", "for", "function", "if", "import", "let",
                 "loop", "package", "namespace", "return", "var", "void", "while", "true", "false", "null"}


class Untranslatable(ValueError):
    pass


def _field(expr: str, key: str) -> str:
    if _IDENT.match(key) and key not in _CEL_RESERVED:
        return f"{expr}.{key}"
    return f"{expr}[{json.dumps(key)}]"


def _has(expr: str, key: str) -> str:
    if contains_wildcard(key):
        raise Untranslatable(f"the wildcard key {key!r} is expanded against the resource's keys in Kyverno")
    if _IDENT.match(key) and key not in _CEL_RESERVED:
        return f"has({expr}.{key})"
    return f"({json.dumps(key)} in {expr})"


def translate(pattern: Any, expr: str = "object", depth: int = 0) -> str:
    if isinstance(pattern, dict):
        parts = [_key(key, value, expr, depth) for key, value in pattern.items()]
        return " && ".join(f"({p})" if " || " in p else p for p in parts) or "true"
    if isinstance(pattern, list):
        if len(pattern) != 1:
            raise Untranslatable("list patterns with more than one element check elements by position")
        var = f"e{depth}"
        return f"{expr}.all({var}, {translate(pattern[0], var, depth + 1)})"
    return _leaf(pattern, expr)


def _key(key: str, value: Any, expr: str, depth: int) -> str:
    anchor = parse_anchor(key)
    if anchor is None:
        if value == "*":
            return _has(expr, key)
        return f"{_has(expr, key)} && {_grouped(translate(value, _field(expr, key), depth))}"
    if anchor.modifier == EQUALITY:
        return f"!{_has(expr, anchor.key)} || {_grouped(translate(value, _field(expr, anchor.key), depth))}"
    if anchor.modifier == NEGATION:
        return f"!{_has(expr, anchor.key)}"
    names = {"": "conditional", "^": "existence", "<": "global", "+": "add-if-absent"}
    raise Untranslatable(f"the {names[anchor.modifier]} anchor {key!r} has no faithful CEL form "
                         "(it skips the rule rather than failing it)")


def _grouped(expression: str) -> str:
    """Parenthesise an alternative so `&&` next to it keeps Kyverno's meaning."""
    return f"({expression})" if " || " in expression else expression


def _leaf(pattern: Any, expr: str) -> str:
    if isinstance(pattern, bool):
        return f"{expr} == {'true' if pattern else 'false'}"
    if isinstance(pattern, int):
        return f"{expr} == {pattern}"
    if pattern is None or isinstance(pattern, float):
        raise Untranslatable(f"the pattern value {pattern!r} (null or float) compares loosely in Kyverno")
    alternatives = [_conjunction(alt.strip(" "), expr) for alt in str(pattern).split("|")]
    return alternatives[0] if len(alternatives) == 1 else " || ".join(f"({a})" for a in alternatives)


def _conjunction(text: str, expr: str) -> str:
    parts = [_single(part.strip(" "), expr) for part in text.split("&")]
    return " && ".join(parts)


def _single(text: str, expr: str) -> str:
    op = operator_of(text)
    operand = text[len(op):].strip() if op not in ("-", "!-") else text
    if op in ("-", "!-"):
        raise Untranslatable(f"range {text!r} compares quantities in Kyverno")
    if is_duration(operand) and operand != "0":
        raise Untranslatable(f"{text!r} compares durations in Kyverno")
    if op in (">", "<", ">=", "<="):
        if not re.fullmatch(r"-?\d+", operand):
            raise Untranslatable(f"{text!r} compares quantities in Kyverno")
        return f"int({expr}) {op} {operand}"
    if re.fullmatch(r"-?\d+(\.\d+)?[A-Za-z]+", operand):
        raise Untranslatable(f"{text!r} compares quantities in Kyverno")
    test = _string_test(operand, expr)
    return f"!({test})" if op == "!" else test


def _string_test(operand: str, expr: str) -> str:
    if operand == "*":
        return "true"
    if operand == "?*":
        return f"string({expr}) != ''"
    if not contains_wildcard(operand):
        return f"string({expr}) == {json.dumps(operand)}"
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in operand)
    return f"string({expr}).matches({json.dumps('^' + regex + '$')})"
