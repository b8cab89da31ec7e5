"""A ValidatingAdmissionPolicy's expressions turned into decisions as Kubernetes' validator does
(k8s.io/apiserver, pkg/admission/plugin/policy/validating/validator.go), where it departs from how Kyverno's
ValidatingPolicy words the same body (validations.run):

- every validation is evaluated, not only up to the first failure: a Warn binding warns once per failing one,
  a Deny binding denies with the first;
- a failure without `reason` is `Invalid` (HTTP 422), not Forbidden;
- the message: `messageExpression` when it gives a non-blank string of one line and at most 5 KiB, else `message`,
  else "failed expression: <the expression>"; each trimmed. A failing messageExpression is not the message;
- an expression error reads "expression '<text>' resulted in error: <error>";
- audit annotations are evaluated whatever the validations decided; a value is trimmed, blank or null leaves the
  key out, anything but a string or null is an error (and denies under failurePolicy Fail).
"""

from __future__ import annotations

from typing import Mapping

from webhook.cel import CelError
from webhook.families.cel.scope import Scope
from webhook.families.cel.validations import ValidateBody, Validation, ValidationVerdict
from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Outcome

MAX_MESSAGE = 5 * 1024  # bytes: celconfig.MaxEvaluatedMessageExpressionSizeBytes
DEFAULT_REASON = "Invalid"  # what the API server answers for a failed validation that names no reason


@frozen_dataclass
class VapEvaluation:
    """Every failing validation (FAIL or ERROR, in order), then the audit annotations' errors; the annotations."""
    decisions: tuple[ValidationVerdict, ...]
    annotations: Mapping[str, str]


def _message(scope: Scope, validation: Validation) -> str:
    if validation.message_expr is not None:
        try:
            value = scope.evaluate(validation.message_expr)
        except CelError:
            value = None  # Kubernetes logs it and falls back
        if isinstance(value, str):
            text = value.strip()
            if text and "\n" not in text and len(text.encode()) <= MAX_MESSAGE:
                return text
    return validation.message.strip() or f"failed expression: {validation.expr.text.strip()}"


def _error(text: str, exc: CelError) -> str:
    return f"expression '{text}' resulted in error: {exc}"


def evaluate(scope: Scope, body: ValidateBody) -> VapEvaluation:
    decisions = []
    for validation in body.validations:
        try:
            ok = scope.test(validation.expr)
        except CelError as exc:
            decisions.append(ValidationVerdict(Outcome.ERROR, _error(validation.expr.text, exc), {}))
            continue
        if not ok:
            decisions.append(ValidationVerdict(Outcome.FAIL, _message(scope, validation), {}, validation.reason or DEFAULT_REASON))
    annotations: dict[str, str] = {}
    for key, expr in body.audit_annotations:
        try:
            value = scope.evaluate(expr)
        except CelError as exc:
            decisions.append(ValidationVerdict(Outcome.ERROR, _error(expr.text, exc), {}))
            continue
        if value is None:
            continue
        if not isinstance(value, str):
            decisions.append(ValidationVerdict(Outcome.ERROR, f"valueExpression '{expr.text}' resulted in unsupported return type: "
                                                    f"{type(value).__name__}. Return type must be either string or null.", {}))
        elif value.strip():
            annotations[key] = value.strip()
    return VapEvaluation(tuple(decisions), annotations)
