"""Kyverno conditions (preconditions, deny, foreach preconditions): ``any``/``all`` blocks or a legacy list.

Operators behave as Kyverno's pkg/engine/variables/operator: Equals compares durations, then quantities, then
wildcard strings; the In family works on string sets with wildcards both ways and ``"1-5"`` ranges; the numeric
operators compare durations, quantities, floats and semantic versions.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any

from webhook.model.quantity import parse_quantity
from webhook.model.quickinit import frozen_dataclass

from .gotypes import is_number, parse_duration, parse_float, parse_int, sprint, wildcard_match
from .jp_semver import _cmp, _parse as parse_semver
from .pattern_values import IN_RANGE, validate_value
from .variables import JsonContext, substitute_all

OPERATORS = ("equal", "equals", "notequal", "notequals", "in", "anyin", "allin", "notin", "anynotin",
             "allnotin", "greaterthanorequals", "greaterthan", "lessthanorequals", "lessthan",
             "durationgreaterthanorequals", "durationgreaterthan", "durationlessthanorequals", "durationlessthan")


class ConditionError(ValueError):
    pass


@frozen_dataclass
class ConditionResult:
    passed: bool
    message: str = ""


def evaluate_conditions(conditions: Any, ctx: JsonContext) -> ConditionResult:
    """Kyverno's EvaluateConditions: a list of any/all blocks, one block, or a legacy list of conditions."""
    if conditions is None:
        return ConditionResult(True)
    if isinstance(conditions, dict):
        return _any_all(conditions, ctx)
    if isinstance(conditions, list) and conditions and all(_is_block(c) for c in conditions):
        messages = []
        for block in conditions:
            result = _any_all(block, ctx)
            if not result.passed:
                return result
            messages.append(result.message)
        return ConditionResult(True, ";".join(m for m in messages if m))
    messages = []
    for condition in conditions or []:
        passed, message = evaluate_condition(condition, ctx)
        if not passed:
            return ConditionResult(False, message)
        messages.append(message)
    return ConditionResult(True, ";".join(m for m in messages if m))


def _is_block(value: Any) -> bool:
    return isinstance(value, dict) and ("any" in value or "all" in value) and "operator" not in value


def _any_all(block: dict, ctx: JsonContext) -> ConditionResult:
    false_messages: list[str] = []
    true_messages: list[str] = []
    any_ok = True
    if block.get("any") is not None:
        any_ok = False
        for condition in block["any"]:
            passed, message = evaluate_condition(condition, ctx)
            (true_messages if passed else false_messages).append(message)
            if passed:
                any_ok = True
                break
    all_ok = True
    for condition in block.get("all") or []:
        passed, message = evaluate_condition(condition, ctx)
        if not passed:
            all_ok = False
            false_messages.append(message)
            break
        true_messages.append(message)
    if any_ok and all_ok:
        return ConditionResult(True, "; ".join(m for m in true_messages if m))
    return ConditionResult(False, "; ".join(m for m in false_messages if m))


def evaluate_condition(condition: dict, ctx: JsonContext) -> tuple[bool, str]:
    try:
        key = substitute_all(condition.get("key"), ctx)
        value = substitute_all(condition.get("value"), ctx)
    except ValueError as exc:
        raise ConditionError(f"failed to substitute variables in condition: {exc}") from exc
    operator = str(condition.get("operator", "")).lower()
    if operator not in OPERATORS:
        raise ConditionError(f"unknown condition operator {condition.get('operator')!r}")
    return apply_operator(operator, key, value), str(condition.get("message") or "")


def apply_operator(operator: str, key: Any, value: Any) -> bool:
    if operator in ("equal", "equals"):
        return equals(key, value)
    if operator in ("notequal", "notequals"):
        # Kyverno's NotEqualHandler: a key of no type it compares (null: a path that resolved to nothing) is false,
        # as for Equals, not the negation of Equals
        return isinstance(key, (bool, int, float, str, dict, list)) and not equals(key, value)
    if operator in ("in", "anyin", "allin", "notin", "anynotin", "allnotin"):
        return _membership(operator, key, value)
    if operator.startswith("duration"):
        return _duration_op(operator[len("duration"):], key, value)
    return _numeric(operator, key, value)


def equals(key: Any, value: Any) -> bool:
    if isinstance(key, bool):
        return isinstance(value, bool) and key == value
    if is_number(key):
        return _number_equals(key, value)
    if isinstance(key, str):
        return _string_equals(key, value)
    if isinstance(key, (dict, list)):
        return type(value) is type(key) and key == value
    return False


def _number_equals(key: float | int, value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if is_number(value):
        return float(key) == float(value)
    if isinstance(value, str):
        try:
            return (parse_int(value) if isinstance(key, int) else parse_float(value)) == key
        except ValueError:
            return False
    return False


def _string_equals(key: str, value: Any) -> bool:
    durations = _durations(key, value)
    if durations is not None:
        return durations[0] == durations[1]
    try:
        key_quantity = parse_quantity(key)
        if isinstance(value, str):
            try:
                return key_quantity == parse_quantity(value)
            except ValueError:
                return False
    except ValueError:
        pass
    return isinstance(value, str) and wildcard_match(value, key)


def _durations(key: Any, value: Any) -> tuple[int, int] | None:
    """Kyverno's parseDuration: at least one side a duration string (not "0"), the other a duration or seconds."""
    parsed = [_as_duration(key), _as_duration(value)]
    if parsed[0] is None and parsed[1] is None:
        return None
    for index, raw in enumerate((key, value)):
        if parsed[index] is None:
            if not is_number(raw):
                return None
            parsed[index] = int(raw * 1_000_000_000)
    return parsed[0], parsed[1]


def _as_duration(value: Any) -> int | None:
    if isinstance(value, str) and value != "0":
        try:
            return parse_duration(value)
        except ValueError:
            return None
    return None


def _membership(operator: str, key: Any, value: Any) -> bool:
    negated = operator in ("notin", "anynotin", "allnotin")
    if isinstance(key, list):
        found = _set_membership(operator, [sprint(k) for k in key], value)
        return bool(found)
    if isinstance(key, (dict,)) or key is None:
        return False
    exists = _key_exists(key if isinstance(key, str) else sprint(key), value)
    if exists is None:
        return False  # Kyverno treats an unusable value type as "no match" for every operator
    return not exists if negated else exists


def _match_both(key: str, value: str) -> bool:
    return wildcard_match(value, key) or wildcard_match(key, value)


def _string_set(value: str) -> list[str] | None:
    try:
        parsed = json.loads(value)
    except ValueError:
        return [value]
    if isinstance(parsed, list) and all(isinstance(v, str) for v in parsed):
        return parsed
    return None


def _key_exists(key: str, value: Any) -> bool | None:
    if isinstance(value, list):
        return any(_match_both(key, sprint(v)) for v in value)
    if isinstance(value, str):
        if wildcard_match(value, key):
            return True
        if IN_RANGE.match(value):
            return validate_value(key, value)
        candidates = _string_set(value)
        return None if candidates is None else key in candidates
    return None


def _set_membership(operator: str, keys: list[str], value: Any) -> bool:
    if isinstance(value, list):
        candidates = [sprint(v) for v in value]
    elif is_number(value) or isinstance(value, bool):
        candidates = [sprint(value)]
    elif isinstance(value, str):
        if len(keys) == 1 and keys[0] == value:
            return operator in ("in", "anyin", "allin")
        if IN_RANGE.match(value):
            inside = [validate_value(k, value) for k in keys]
            return _combine(operator, inside)
        candidates = _string_set(value)
        if candidates is None:
            return False
    else:
        return False
    return _combine(operator, [any(_match_both(k, c) for c in candidates) for k in keys])


def _combine(operator: str, inside: list[bool]) -> bool:
    if operator in ("in", "allin"):
        return all(inside)
    if operator == "anyin":
        return any(inside)
    if operator == "allnotin":
        return not any(inside)
    return not all(inside)  # anynotin / notin: some key is outside the set


def _numeric(operator: str, key: Any, value: Any) -> bool:
    order = _order(key, value)
    if order is None:
        return False
    return {"greaterthanorequals": order >= 0, "greaterthan": order > 0,
            "lessthanorequals": order <= 0, "lessthan": order < 0}[operator]


def _order(key: Any, value: Any) -> int | None:
    """Compare as Kyverno's numeric handler: durations, then quantities, then numbers, then semver."""
    if isinstance(key, bool) or isinstance(value, bool):
        return None
    durations = _durations(key, value)
    if durations is not None:
        return _sign(durations[0] - durations[1])
    if isinstance(key, str):
        if isinstance(value, str):
            try:
                return _sign(parse_quantity(key) - parse_quantity(value))
            except ValueError:
                pass
        for parser in (parse_float, parse_int):
            try:
                return _order(parser(key), value)
            except ValueError:
                continue
        try:
            return _cmp(parse_semver(key), parse_semver(value)) if isinstance(value, str) else None
        except ValueError:
            return None
    if not is_number(key):
        return None
    if is_number(value):
        return _sign(Fraction(key) - Fraction(value))
    if isinstance(value, str):
        for parser in (parse_float, parse_int):
            try:
                return _sign(Fraction(key) - Fraction(parser(value)))
            except ValueError:
                continue
    return None


def _sign(number: Any) -> int:
    return (number > 0) - (number < 0)


def _duration_op(operator: str, key: Any, value: Any) -> bool:
    def seconds(raw: Any) -> float | None:
        if is_number(raw):
            return float(raw)
        if isinstance(raw, str):
            try:
                return parse_duration(raw) / 1e9
            except ValueError:
                return None
        return None
    left, right = seconds(key), seconds(value)
    if left is None or right is None or math.isnan(left):
        return False
    return {"greaterthanorequals": left >= right, "greaterthan": left > right,
            "lessthanorequals": left <= right, "lessthan": left < right}[operator]
