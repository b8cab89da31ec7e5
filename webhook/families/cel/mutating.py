"""Mutation: Kyverno MutatingPolicy (and NamespacedMutatingPolicy) and Kubernetes MutatingAdmissionPolicy.

Mutations run in order, each on the result of the previous one (`object` is the object as mutated so
far): an ApplyConfiguration expression returns an `Object{...}` that is merged structurally, a JSONPatch
expression returns a list of `JSONPatch{...}` operations. Any failing mutation leaves the object as
it was and is an `error` result under the failure policy. The engine turns the final object into the
JSON Patch of the admission response.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from webhook.cel import CelCompiler, CelError
from webhook.cel.values import NotJson, json_value
from webhook.families.cel.applyconfig import PatchError, apply_patch, atomic_lists, merge
from webhook.families.cel.base import CelPolicy, Variant, exception_message
from webhook.families.cel.scope import CompileFailed, Expr, compile_expr
from webhook.model.lookups import LookupRefused
from webhook.model.policy import EvalContext, FailurePolicy, MutationOutcome
from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Action, Outcome, RuleResult
from webhook.model.review import AdmissionRequest

PATCH_TYPES = ("ApplyConfiguration", "JSONPatch")


@frozen_dataclass
class Mutation:
    patch_type: str
    expr: Expr


@frozen_dataclass
class MutateBody:
    mutations: tuple[Mutation, ...]
    reinvoke: bool = False  # reinvocationPolicy: IfNeeded


def compile_body(cel: CelCompiler, spec: Mapping[str, Any], env: str) -> MutateBody:
    mutations = []
    for i, raw in enumerate(spec.get("mutations") or []):
        where = f"spec.mutations[{i}]"
        patch_type = raw.get("patchType") if isinstance(raw, Mapping) else None
        if patch_type not in PATCH_TYPES:
            raise CompileFailed(f"{where}.patchType", f"must be one of {', '.join(PATCH_TYPES)}")
        key = "applyConfiguration" if patch_type == "ApplyConfiguration" else "jsonPatch"
        holder = raw.get(key) or {}
        if not isinstance(holder, Mapping):
            raise CompileFailed(f"{where}.{key}", "must be a mapping with an expression")
        mutations.append(Mutation(patch_type, compile_expr(cel, holder.get("expression"), f"{where}.expression", env)))
    if not mutations:
        raise CompileFailed("spec.mutations", "a mutating policy needs at least one mutation")
    reinvocation = spec.get("reinvocationPolicy") or "Never"
    if reinvocation not in ("Never", "IfNeeded"):
        raise CompileFailed("spec.reinvocationPolicy", "must be Never or IfNeeded")
    return MutateBody(tuple(mutations), reinvocation == "IfNeeded")


@dataclass(eq=False, frozen=True)
class MutatingPolicy(CelPolicy):
    """Kyverno's MutatingPolicy / NamespacedMutatingPolicy; also the core of MutatingAdmissionPolicy."""

    # evaluation.useServerSideApply (Kyverno 1.19+): an ApplyConfiguration replaces an atomic list whole, as
    # server-side apply does; without it, setting one is an error, as in a MutatingAdmissionPolicy
    server_side_apply: bool = False

    def _reinvokes(self) -> bool:
        return any(variant.body.reinvoke for variant in self.variants)

    def _result(self, outcome: Outcome, message: str, rule: str = "") -> RuleResult:
        fatal = outcome is Outcome.ERROR and self.failure_policy is FailurePolicy.FAIL
        return RuleResult(self.id, rule, outcome, message, Action.ENFORCE if fatal else Action.AUDIT)

    async def mutate(self, request: AdmissionRequest, obj: dict[str, Any], ctx: EvalContext) -> MutationOutcome:
        variant = self.variant_for(request, obj, ctx)
        if variant is None:
            return MutationOutcome(obj)
        return self._mutate(request, obj, ctx, variant, None, "")

    def _mutate(self, request: AdmissionRequest, obj: dict[str, Any], ctx: EvalContext, variant: Variant,
                params: Any, rule: str) -> MutationOutcome:
        extra = {"params": params} if params is not None else None
        scope = self.scope(request, obj, ctx, variant, extra)
        try:
            found = self.check_exceptions(scope, request)
            if found.exempt:
                as_pass, message = exception_message(found.exempt)
                return MutationOutcome(obj, (self._result(Outcome.PASS if as_pass else Outcome.SKIP, message, "exception"),))
            scope.set("exceptions", found.allowed)
            if not variant.conditions.holds(scope, self.failure_policy):
                return MutationOutcome(obj, (self._result(Outcome.SKIP, "skip", rule),))
        except (CelError, LookupRefused) as exc:
            return MutationOutcome(obj, (self._result(Outcome.ERROR, f"failed to evaluate match conditions: {exc}", rule),))
        current = obj
        for mutation in variant.body.mutations:
            step = self.scope(request, current, ctx, variant, {**(extra or {}), "exceptions": found.allowed})
            try:
                # as JSON, as cel-go converts it (a duration "1s", bytes base64); a CEL type is an error
                value = json_value(step.evaluate(mutation.expr), "its value")
                if mutation.patch_type == "ApplyConfiguration" and not self.server_side_apply:
                    atomics = atomic_lists(value)
                    if atomics:
                        raise PatchError(f"may not mutate atomic arrays, maps or structs: {', '.join(atomics)}")
                current = merge(current, value) if mutation.patch_type == "ApplyConfiguration" else apply_patch(current, value)
            except (CelError, PatchError, NotJson, LookupRefused) as exc:
                return MutationOutcome(obj, (self._result(Outcome.ERROR, f"{mutation.expr.field}: {exc}", rule),))
            if not isinstance(current, dict):
                return MutationOutcome(obj, (self._result(Outcome.ERROR, f"{mutation.expr.field}: must produce an object", rule),))
        return MutationOutcome(current, (self._result(Outcome.PASS, "success", rule),))


@dataclass(eq=False, frozen=True)
class MutatingAdmissionPolicy(MutatingPolicy):
    """Kubernetes' MutatingAdmissionPolicy: applied once per binding that selects the request."""

    bindings: tuple[Any, ...] = ()  # validating.Binding (validation actions unused)
    param_kind: Mapping[str, str] | None = None

    def matches(self, request: AdmissionRequest, obj: Mapping[str, Any] | None, ctx: EvalContext) -> bool:
        return super().matches(request, obj, ctx) and any(
            b.match is None or b.match.matches(request, obj, ctx.namespace) for b in self.bindings)

    async def mutate(self, request: AdmissionRequest, obj: dict[str, Any], ctx: EvalContext) -> MutationOutcome:
        from webhook.families.cel.params import NoParams, resolve_params

        variant = self.variant_for(request, obj, ctx)
        results: list[RuleResult] = []
        if variant is None:
            return MutationOutcome(obj)
        for binding in self.bindings:
            if binding.match is not None and not binding.match.matches(request, obj, ctx.namespace):
                continue
            try:
                params = [None] if binding.stand_in else resolve_params(
                    self.param_kind, binding.param_ref, request, ctx, binding.params_list)
            except NoParams as exc:
                if not exc.allow:
                    results.append(self._result(Outcome.ERROR, str(exc), binding.name))
                continue
            except LookupRefused as exc:
                results.append(self._result(Outcome.ERROR, f"cannot read params: {exc}", binding.name))
                continue
            for param in params:
                outcome = self._mutate(request, obj, ctx, variant, param, binding.name)
                obj = dict(outcome.object)
                results.extend(outcome.results)
        return MutationOutcome(obj, tuple(results))
