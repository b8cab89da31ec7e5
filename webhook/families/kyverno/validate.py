"""A Kyverno validate rule (pkg/engine/handlers/validation/validate_resource.go).

One validator runs a rule or a foreach entry: load its context, check its preconditions, then ``deny``,
``pattern``/``anyPattern`` or a nested ``foreach``. Rule-level ``podSecurity`` and ``cel`` have their own modules.
"""

from __future__ import annotations

from typing import Any, Mapping

from .conditions import ConditionError, evaluate_conditions
from .context import ContextError, load_entries
from .outcome import ERROR, FAIL, PASS, SKIP, Outcome, RuleEnv
from .pattern import match_pattern
from .references import check
from .variables import Context, SubstitutionError, lenient_resolver, substitute_all, substitute_string


def run_validator(name: str, spec: Mapping[str, Any], ctx: Context, env: RuleEnv, resource: Any,
                  element: Any = None, nesting: int = 0) -> Outcome | None:
    """``resource`` is what patterns check (the element when the foreach is element-scoped)."""
    try:
        ctx = load_entries(spec.get("context"), ctx, env.lookups, env.overrides)
    except ContextError as exc:
        return Outcome(ERROR, f"failed to load context: {exc}")
    try:
        pre = evaluate_conditions(spec.get("preconditions"), ctx)
    except ConditionError as exc:
        return Outcome(ERROR, f"failed to evaluate preconditions: {exc}")
    if not pre.passed:
        return Outcome(SKIP, "; ".join(m for m in ("preconditions not met", pre.message) if m))
    if spec.get("deny") is not None:
        return _deny(name, spec, ctx)
    if spec.get("pattern") is not None or spec.get("anyPattern") is not None:
        return _patterns(name, spec, ctx, resource)
    if spec.get("foreach"):
        from .foreach import validate_foreach
        return validate_foreach(name, spec["foreach"], ctx, env, resource, nesting, spec.get("message") or "")
    return None


def _message(spec: Mapping[str, Any], ctx: Context) -> str:
    raw = spec.get("message") or ""
    try:
        value = substitute_string(raw, ctx, lenient_resolver) if isinstance(raw, str) else raw
    except SubstitutionError:
        return raw
    return value if isinstance(value, str) else str(value)


def _deny(name: str, spec: Mapping[str, Any], ctx: Context) -> Outcome:
    deny = spec["deny"] or {}
    try:
        result = evaluate_conditions(deny.get("conditions"), ctx)
    except ConditionError as exc:
        return Outcome(ERROR, f"failed to check deny conditions: {exc}")
    if not result.passed:
        return Outcome(PASS, f"validation rule '{name}' passed.")
    message = "; ".join(m for m in (_message(spec, ctx), result.message) if m)
    return Outcome(FAIL, message or f"validation error: rule {name} failed")


def _patterns(name: str, spec: Mapping[str, Any], ctx: Context, resource: Any) -> Outcome | None:
    try:
        pattern = substitute_all(check(spec.get("pattern")), ctx) if spec.get("pattern") is not None else None
        any_pattern = substitute_all(check(spec.get("anyPattern")), ctx) if pattern is None else None
    except SubstitutionError as exc:
        return Outcome(ERROR, f"variable substitution failed: {exc}")
    if resource is None:
        return None  # a DELETE without an element: Kyverno skips pattern validation
    if pattern is not None:
        result = match_pattern(resource, pattern)
        if result.status == "pass":
            return Outcome(PASS, f"validation rule '{name}' passed.")
        if result.status == "skip":
            return Outcome(SKIP, result.message)
        return Outcome(FAIL if result.status == "fail" else ERROR, _failure(name, spec, ctx, result))
    return _any_pattern(name, spec, ctx, resource, any_pattern)


def _failure(name: str, spec: Mapping[str, Any], ctx: Context, result: Any) -> str:
    message = _message(spec, ctx)
    if message and not message.endswith("."):
        message += "."
    prefix = f"validation error: {message} " if message else "validation error: "
    if result.path:
        return f"{prefix}rule {name} failed at path {result.path}"
    return f"{prefix}rule {name} execution error: {result.message}"


def _any_pattern(name: str, spec: Mapping[str, Any], ctx: Context, resource: Any, patterns: Any) -> Outcome:
    if not isinstance(patterns, list):
        return Outcome(ERROR, "failed to deserialize anyPattern, expected type array")
    failures: list[str] = []
    skips: list[str] = []
    for index, pattern in enumerate(patterns):
        result = match_pattern(resource, pattern)
        if result.status == "pass":
            return Outcome(PASS, f"validation rule '{name}' anyPattern[{index}] passed.")
        if result.status == "skip":
            skips.append(f"rule {name}[{index}] skipped: {result.message}")
        elif result.path:
            failures.append(f"rule {name}[{index}] failed at path {result.path}")
        else:
            failures.append(f"rule {name}[{index}] failed: {result.message}")
    if skips and not failures:
        return Outcome(SKIP, " ".join(skips))
    message = _message(spec, ctx)
    detail = " ".join(failures)
    if not message:
        return Outcome(FAIL, f"validation error: {detail}")
    return Outcome(FAIL, f"validation error: {message}{'' if message.endswith('.') else '.'} {detail}")
