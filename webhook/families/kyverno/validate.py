"""The checks of a Kyverno validate rule or foreach entry (pkg/engine/handlers/validation/validate_resource.go):
``deny``, ``pattern`` and ``anyPattern``. Rule-level ``podSecurity`` and ``cel`` and ``foreach`` have their own
modules; context and preconditions run before any of them (guard.py)."""

from __future__ import annotations

from typing import Any

from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Outcome, RuleResult

from .conditions import ConditionError, evaluate_conditions
from .pattern import PatternPlans, PatternResult, match_pattern
from .references import check
from .rule_env import RuleEnv
from .rule_types import RuleRef
from .variables import JsonContext, SubstitutionError, lenient_resolver, substitute_all, substitute_string


def render_message(message: Any, ctx: JsonContext) -> str:
    """validate.message with its variables; one that does not resolve is shown as written."""
    try:
        value = substitute_string(message, ctx, lenient_resolver) if isinstance(message, str) else message
    except SubstitutionError:
        return message  # type: ignore[no-any-return]
    return value if isinstance(value, str) else str(value)


@frozen_dataclass
class DenyCheck:
    conditions: Any
    message: Any = ""

    def check(self, ref: RuleRef, ctx: JsonContext, env: RuleEnv, resource: Any) -> RuleResult:
        try:
            result = evaluate_conditions(self.conditions, ctx)
        except ConditionError as exc:
            return ref.result(Outcome.ERROR, f"failed to check deny conditions: {exc}")
        if not result.passed:
            return ref.result(Outcome.PASS, f"validation rule '{ref.name}' passed.")
        message = "; ".join(m for m in (render_message(self.message, ctx), result.message) if m)
        return ref.result(Outcome.FAIL, message or f"validation error: rule {ref.name} failed")


@frozen_dataclass
class _Document:
    """A pattern as written (its $(...) references resolved at load), substituted per request unless it has
    no variable; a pattern without variables is planned once, here."""

    value: Any
    static: bool
    plans: PatternPlans

    def render(self, ctx: JsonContext) -> Any:
        value = check(self.value)   # a reference that did not resolve at load fails here, as in Kyverno
        return value if self.static else substitute_all(value, ctx)


def pattern_document(value: Any, has_variables: bool) -> _Document:
    return _Document(value, not has_variables, PatternPlans.of(value if not has_variables else None))


@frozen_dataclass
class PatternCheck:
    pattern: _Document
    message: Any = ""
    # anyPattern beside a pattern that renders to null: Kyverno then reads anyPattern (rare, kept exact)
    fallback: _Document | None = None

    def check(self, ref: RuleRef, ctx: JsonContext, env: RuleEnv, resource: Any) -> RuleResult | None:
        try:
            pattern = self.pattern.render(ctx)
            alternatives = self.fallback.render(ctx) if pattern is None and self.fallback is not None else None
        except SubstitutionError as exc:
            return ref.result(Outcome.ERROR, f"variable substitution failed: {exc}")
        if resource is None:
            return None  # a DELETE without an element: Kyverno skips pattern validation
        if pattern is None:
            return any_pattern(ref, self.message, ctx, resource, alternatives, self.pattern.plans)
        result = match_pattern(resource, pattern, self.pattern.plans)
        if result.status == "pass":
            return ref.result(Outcome.PASS, f"validation rule '{ref.name}' passed.")
        if result.status == "skip":
            return ref.result(Outcome.SKIP, result.message)
        outcome = Outcome.FAIL if result.status == "fail" else Outcome.ERROR
        return ref.result(outcome, _failure(ref.name, self.message, ctx, result))


@frozen_dataclass
class AnyPatternCheck:
    patterns: _Document
    message: Any = ""

    def check(self, ref: RuleRef, ctx: JsonContext, env: RuleEnv, resource: Any) -> RuleResult | None:
        try:
            patterns = self.patterns.render(ctx)
        except SubstitutionError as exc:
            return ref.result(Outcome.ERROR, f"variable substitution failed: {exc}")
        if resource is None:
            return None
        return any_pattern(ref, self.message, ctx, resource, patterns, self.patterns.plans)


def _failure(name: str, message: Any, ctx: JsonContext, result: PatternResult) -> str:
    text = render_message(message, ctx)
    if text and not text.endswith("."):
        text += "."
    prefix = f"validation error: {text} " if text else "validation error: "
    if result.path:
        return f"{prefix}rule {name} failed at path {result.path}"
    return f"{prefix}rule {name} execution error: {result.message}"


def any_pattern(ref: RuleRef, message: Any, ctx: JsonContext, resource: Any, patterns: Any,
                plans: PatternPlans) -> RuleResult:
    if not isinstance(patterns, list):
        return ref.result(Outcome.ERROR, "failed to deserialize anyPattern, expected type array")
    name = ref.name
    failures: list[str] = []
    skips: list[str] = []
    for index, pattern in enumerate(patterns):
        result = match_pattern(resource, pattern, plans)
        if result.status == "pass":
            return ref.result(Outcome.PASS, f"validation rule '{name}' anyPattern[{index}] passed.")
        if result.status == "skip":
            skips.append(f"rule {name}[{index}] skipped: {result.message}")
        elif result.path:
            failures.append(f"rule {name}[{index}] failed at path {result.path}")
        else:
            failures.append(f"rule {name}[{index}] failed: {result.message}")
    if skips and not failures:
        return ref.result(Outcome.SKIP, " ".join(skips))
    text = render_message(message, ctx)
    detail = " ".join(failures)
    if not text:
        return ref.result(Outcome.FAIL, f"validation error: {detail}")
    return ref.result(Outcome.FAIL, f"validation error: {text}{'' if text.endswith('.') else '.'} {detail}")


