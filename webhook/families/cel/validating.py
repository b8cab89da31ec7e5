"""Validation: Kyverno ValidatingPolicy (and NamespacedValidatingPolicy) and Kubernetes
ValidatingAdmissionPolicy with its bindings.

Evaluation order as in Kubernetes/Kyverno: match constraints, exceptions, match conditions (false:
a `skip` result), then validations in order; the first false one fails with its message
(`messageExpression` wins when it evaluates to a string), an expression error is an `error` result.
What a failure does comes from validationActions: Deny blocks, Warn and Audit let it through with a
warning and a report entry.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from webhook.cel import CelCompiler, CelError
from webhook.families.cel import fused
from webhook.families.cel.base import NO_EXCEPTIONS, CelPolicy, Variant, exception_message, shared_activation
from webhook.families.cel.route import Route
from webhook.families.cel.scope import CompileFailed, Expr, Scope, compile_expr
from webhook.model.lookups import LookupRefused
from webhook.model.policy import EvalContext, FailurePolicy, ValidationOutcome
from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Action, Outcome, RuleResult
from webhook.model.review import AdmissionRequest
from webhook.families.cel import vap_decisions
from webhook.families.cel.validations import ValidateBody, action_for, run

NOTHING = ValidationOutcome()

@dataclass(eq=False, frozen=True)
class ValidatingPolicy(CelPolicy):
    """Kyverno's ValidatingPolicy / NamespacedValidatingPolicy. Its route (webhook.families.cel.route) says
    which of the fast routes it tries before the reference one; each falls through to the next on anything
    it cannot decide, so every route gives the reference route's result."""

    actions: frozenset[str] = frozenset({"Deny"})

    async def validate(self, request: AdmissionRequest, obj: Mapping[str, Any], ctx: EvalContext) -> ValidationOutcome:
        if self.route.route is not Route.REFERENCE and ctx.request is not None:
            try:
                outcome = self._fast(request, ctx)
            except Exception:  # the fast routes never add a way to fail: the reference route decides
                outcome = None
            if outcome is not None and outcome is not fused.REFERENCE:
                return outcome
        return self.reference(request, ctx)

    def reference(self, request: AdmissionRequest, ctx: EvalContext) -> ValidationOutcome:
        """The reference route's outcome: what every other route's must equal."""
        variant = self.variant_for(request, request.object, ctx)
        if variant is None:
            return NOTHING
        return ValidationOutcome(results=(self._evaluate(request, ctx, variant),))

    def _fast(self, request: AdmissionRequest, ctx: EvalContext) -> Any:
        """The outcome from the fused program(s); fused.REFERENCE or None: the reference route decides."""
        route = self.route
        if route.group is not None:
            outcome = route.group.outcome(route.slot, request, ctx)  # decided only where the request matches
            if outcome is not None:
                return outcome
        variant = self.variant_for(request, request.object, ctx)
        if variant is None:
            return NOTHING
        program = self.fast_path(variant)
        if program is None:
            return None
        shared = fused.activation(ctx, request.object, NO_EXCEPTIONS.allowed, shared_activation)
        return fused.decide(program, shared, self.timeout)

    def fast_path(self, variant: Variant) -> fused.Fused | None:
        """The variant's fused program, as its route holds it (None on the reference route)."""
        for index, candidate in enumerate(self.variants):
            if candidate is variant:
                return self.route.program(index)
        return None

    def fuse(self, variant: Variant) -> fused.Fused | str:
        """The variant's fused program (text only: compiled on first use), or why it has none."""
        body: ValidateBody = variant.body
        cel = variant.variables.cel
        if cel is None:
            return "no CEL compiler"
        if body.audit_annotations:
            return "it has auditAnnotations (evaluated per request)"

        def outcome(code: int) -> ValidationOutcome | None:
            if code == fused.SKIP:
                return ValidationOutcome(results=(self._result(Outcome.SKIP, "skip"),))
            if code == 0:
                return ValidationOutcome(results=(self._result(Outcome.PASS, "success"),))
            validation = body.validations[code - 1]
            if validation.message_expr is not None:
                return None  # evaluated per request: the reference route
            message = validation.message or f"CEL expression validation failed at index {code - 1}"
            return ValidationOutcome(results=(self._result(Outcome.FAIL, message),))

        return fused.fuse(cel, variant.conditions.exprs, [v.expr for v in body.validations], variant.variables,
                          outcome)

    def fold_reference(self) -> None:
        """Fold ahead the expressions of its reference route, which a failing request runs for its message
        (the family does it when it plans the set, so that no request pays it)."""
        for variant in self.variants:
            body: ValidateBody = variant.body
            exprs = [v.expr for v in body.validations] + [e for _, e in body.audit_annotations]
            exprs += [v.message_expr for v in body.validations if v.message_expr is not None]
            for expr in exprs:
                variant.variables.folded(expr)

    def _result(self, outcome: Outcome, message: str, rule: str = "") -> RuleResult:
        return RuleResult(self.id, rule, outcome, message, action_for(self.actions, outcome, self.failure_policy))

    def _evaluate(self, request: AdmissionRequest, ctx: EvalContext, variant: Variant) -> RuleResult:
        scope = self.scope(request, request.object, ctx, variant, share=True)
        try:
            found = self.check_exceptions(scope, request)
            if found.exempt:
                as_pass, message = exception_message(found.exempt)
                return self._result(Outcome.PASS if as_pass else Outcome.SKIP, message, "exception")
            scope.set("exceptions", found.allowed)
            if not variant.conditions.holds(scope, self.failure_policy):
                return self._result(Outcome.SKIP, "skip")
        except (CelError, LookupRefused) as exc:
            return self._result(Outcome.ERROR, f"failed to evaluate match conditions: {exc}")
        verdict = run(scope, variant.body)
        result = self._result(verdict.outcome, verdict.message or ("success" if verdict.outcome is Outcome.PASS else ""))
        return replace(result, audit=tuple(sorted(verdict.annotations.items())))


@frozen_dataclass
class Binding:
    name: str
    actions: frozenset[str]
    match: Any  # MatchResources or None
    param_ref: Mapping[str, Any] | None
    # the Kyverno CLI's stand-in for a policy without any binding (webhook.testsuite only, never `serve`):
    # it selects what the policy selects and evaluates with `params` null
    stand_in: bool = False
    # `kyverno test` again: the objects a paramRef selector finds are one `params` object {items: [...]},
    # not one evaluation each as in the API server
    params_list: bool = False


@dataclass(eq=False, frozen=True)
class ValidatingAdmissionPolicy(CelPolicy):
    """Kubernetes' ValidatingAdmissionPolicy, evaluated once per binding that selects the request."""

    bindings: tuple[Binding, ...] = ()
    param_kind: Mapping[str, str] | None = None

    def matches(self, request: AdmissionRequest, obj: Mapping[str, Any] | None, ctx: EvalContext) -> bool:
        return bool(self.bindings) and super().matches(request, obj, ctx)

    @staticmethod
    def _bound(binding: Binding, request: AdmissionRequest, obj: Mapping[str, Any] | None, ctx: EvalContext) -> bool:
        return binding.match is None or binding.match.matches(request, obj, ctx.namespace)

    async def validate(self, request: AdmissionRequest, obj: Mapping[str, Any], ctx: EvalContext) -> ValidationOutcome:
        variant = self.variant_for(request, request.object, ctx)
        if variant is None:
            return ValidationOutcome()
        results = []
        bound = [b for b in self.bindings if self._bound(b, request, request.object, ctx)]
        for binding in bound:
            results.extend(self._evaluate(request, ctx, variant, binding))
        if not bound:  # the policy applies, none of its bindings does: skipped (as the Kyverno CLI reports it)
            results.append(RuleResult(self.id, "", Outcome.SKIP, "no binding of this policy selects the request"))
        return ValidationOutcome(results=tuple(results))

    def _result(self, binding: Binding, outcome: Outcome, message: str) -> RuleResult:
        # the API server warns only for a Warn binding, and never for an error its failurePolicy Ignore admits
        quiet = "Warn" not in binding.actions or (outcome is Outcome.ERROR and self.failure_policy is FailurePolicy.IGNORE)
        return RuleResult(self.id, binding.name, outcome, message, action_for(binding.actions, outcome, self.failure_policy),
                          quiet=quiet)

    def _evaluate(self, request: AdmissionRequest, ctx: EvalContext, variant: Variant, binding: Binding) -> list[RuleResult]:
        from webhook.families.cel.params import NoParams, resolve_params

        try:
            params = [None] if binding.stand_in else resolve_params(
                self.param_kind, binding.param_ref, request, ctx, binding.params_list)
        except NoParams as exc:
            if exc.allow:
                return []
            return [self._result(binding, Outcome.ERROR, str(exc))]
        except LookupRefused as exc:
            return [self._result(binding, Outcome.ERROR, f"cannot read params: {exc}")]
        results = []
        for param in params:
            scope = self.scope(request, request.object, ctx, variant, {"params": param}, share=True)
            try:
                if not variant.conditions.holds(scope, self.failure_policy):
                    # nothing to enforce; reported as `skip`, as Kyverno reports a VAP whose conditions are false
                    results.append(self._result(binding, Outcome.SKIP, "match conditions aren't met"))
                    continue
            except CelError as exc:
                results.append(self._result(binding, Outcome.ERROR, f"failed to evaluate match conditions: {exc}"))
                continue
            evaluation = vap_decisions.evaluate(scope, variant.body)
            audit = tuple(sorted(evaluation.annotations.items()))
            if not evaluation.decisions:
                results.append(replace(self._result(binding, Outcome.PASS, ""), audit=audit))
            for verdict in evaluation.decisions:
                result = self._result(binding, verdict.outcome, verdict.message)
                results.append(replace(result, reason=verdict.reason if verdict.outcome is Outcome.FAIL else "",
                                       audit=audit))
        if "Warn" in binding.actions:  # Kubernetes warns once per failing validation
            return [r for r in results if r.outcome in (Outcome.FAIL, Outcome.ERROR)] or _decisive(results)
        return _decisive(results)


def _decisive(results: list[RuleResult]) -> list[RuleResult]:
    """One result per binding: the first failure or error, else the first pass, else the first skip."""
    for wanted in ((Outcome.FAIL, Outcome.ERROR), (Outcome.PASS,), (Outcome.SKIP,)):
        found = [r for r in results if r.outcome in wanted]
        if found:
            return found[:1]
    return []
