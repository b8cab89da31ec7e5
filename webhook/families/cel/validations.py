"""A validate body (validations, messageExpressions, audit annotations) compiled and run on one request's scope,
and what a failure does under validationActions: shared by Kyverno's ValidatingPolicy and Kubernetes'
ValidatingAdmissionPolicy (webhook.families.cel.validating), whose VAP wording is vap_decisions."""

from __future__ import annotations

from typing import Any, Mapping

from webhook.cel import CelCompiler, CelError
from webhook.families.cel.scope import CompileFailed, Expr, Scope, compile_expr
from webhook.model.policy import FailurePolicy
from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Action, Outcome

ACTIONS = ("Deny", "Warn", "Audit")
REASONS = {"Unauthorized": 401, "Forbidden": 403, "Invalid": 422, "RequestEntityTooLarge": 413}


@frozen_dataclass
class Validation:
    expr: Expr
    message: str = ""
    message_expr: Expr | None = None
    reason: str = "Forbidden"


@frozen_dataclass
class ValidateBody:
    validations: tuple[Validation, ...]
    audit_annotations: tuple[tuple[str, Expr], ...] = ()


def compile_body(cel: CelCompiler, spec: Mapping[str, Any], env: str) -> ValidateBody:
    validations = []
    for i, raw in enumerate(spec.get("validations") or []):
        where = f"spec.validations[{i}]"
        if not isinstance(raw, Mapping):
            raise CompileFailed(where, "must be a mapping with an expression")
        message_expr = raw.get("messageExpression")
        reason = raw.get("reason") or ""  # unset: Forbidden for Kyverno's kinds, Invalid for a VAP (vap_decisions)
        if reason and reason not in REASONS:
            raise CompileFailed(f"{where}.reason", f"must be one of {', '.join(REASONS)}")
        validations.append(Validation(
            compile_expr(cel, raw.get("expression"), f"{where}.expression", env), str(raw.get("message") or ""),
            compile_expr(cel, message_expr, f"{where}.messageExpression", env) if message_expr else None, reason))
    annotations = []
    for i, raw in enumerate(spec.get("auditAnnotations") or []):
        where = f"spec.auditAnnotations[{i}]"
        key = raw.get("key") if isinstance(raw, Mapping) else None
        if not isinstance(key, str) or not key:
            raise CompileFailed(f"{where}.key", "an audit annotation needs a key")
        annotations.append((key, compile_expr(cel, raw.get("valueExpression"), f"{where}.valueExpression", env)))
    if not validations and not annotations:
        raise CompileFailed("spec.validations", "a validating policy needs validations or auditAnnotations")
    return ValidateBody(tuple(validations), tuple(annotations))


def parse_actions(raw: Any, field: str, default: tuple[str, ...] = ("Deny",)) -> frozenset[str]:
    if raw is None or raw == []:
        return frozenset(default)
    if not isinstance(raw, list) or any(a not in ACTIONS for a in raw):
        raise CompileFailed(field, f"must be a list of {', '.join(ACTIONS)}")
    return frozenset(raw)




@frozen_dataclass
class ValidationVerdict:
    outcome: Outcome
    message: str
    annotations: Mapping[str, str]
    reason: str = ""


def _message(scope: Scope, validation: Validation, index: int) -> str:
    if validation.message_expr is not None:
        try:
            value = scope.evaluate(validation.message_expr)
            if isinstance(value, str) and value.strip():
                return value
        except CelError as exc:
            return f"failed to evaluate message expression: {exc}"
    return validation.message or f"CEL expression validation failed at index {index}"


def _annotations(scope: Scope, body: ValidateBody) -> dict[str, str]:
    out = {}
    for key, expr in body.audit_annotations:
        value = scope.evaluate(expr)
        if value is not None and not isinstance(value, str):
            raise CelError(f"auditAnnotation {key!r} must evaluate to a string or null")
        if value:
            out[key] = value
    return out


def run(scope: Scope, body: ValidateBody) -> ValidationVerdict:
    """The validations in order; the first false one decides."""
    for index, validation in enumerate(body.validations):
        try:
            ok = scope.test(validation.expr)
        except CelError as exc:
            return ValidationVerdict(Outcome.ERROR, f"{validation.expr.field}: {exc}", {})
        if not ok:
            try:
                annotations = _annotations(scope, body)
            except CelError as exc:
                return ValidationVerdict(Outcome.ERROR, str(exc), {})
            return ValidationVerdict(Outcome.FAIL, _message(scope, validation, index), annotations, validation.reason)
    try:
        return ValidationVerdict(Outcome.PASS, "", _annotations(scope, body))
    except CelError as exc:
        return ValidationVerdict(Outcome.ERROR, str(exc), {})


def action_for(actions: frozenset[str], outcome: Outcome, failure: FailurePolicy) -> Action:
    if outcome is Outcome.ERROR and failure is FailurePolicy.IGNORE:
        return Action.AUDIT
    return Action.ENFORCE if "Deny" in actions else Action.AUDIT
