"""Generation: Kyverno GeneratingPolicy (and NamespacedGeneratingPolicy).

Each `generate[].expression` calls `generator.Apply(namespace, objects)`; the objects are what the
request brings into being once it is admitted (ValidationOutcome.generates: never on dryRun; standalone
and `apply` record and print them, live mode creates them). Generated objects carry Kyverno's
ownership labels (`generate.kyverno.io/policy-name`, ...), so reports and `test` can tell their origin.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Mapping

from webhook.cel import CelCompiler, CelError
from webhook.families.cel.base import CelPolicy, Variant, exception_message
from webhook.families.cel.scope import CompileFailed, Expr, compile_expr
from webhook.families.cel.template import GeneratedTemplate
from webhook.model.lookups import LookupRefused
from webhook.model.policy import EvalContext, FailurePolicy, ValidationOutcome
from webhook.model.policy_scope import generation_refusal
from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Action, Outcome, RuleResult
from webhook.model.review import AdmissionRequest

# set by the API server on the source of a clone (resource.Get/List): never part of what is created
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink")


@frozen_dataclass
class GenerateBody:
    generators: tuple[Expr | GeneratedTemplate, ...]


def compile_body(cel: CelCompiler, spec: Mapping[str, Any]) -> GenerateBody:
    generators: list[Expr | GeneratedTemplate] = []
    for i, raw in enumerate(spec.get("generate") or []):
        if isinstance(raw, Mapping) and raw.get("template") is not None:
            generators.append(GeneratedTemplate.compile(cel, raw["template"], f"spec.generate[{i}].template"))
            continue
        expression = raw.get("expression") if isinstance(raw, Mapping) else None
        generators.append(compile_expr(cel, expression, f"spec.generate[{i}].expression", "kyverno"))
    if not generators:
        raise CompileFailed("spec.generate", "a generating policy needs at least one generate expression")
    return GenerateBody(tuple(generators))


@dataclass(eq=False, frozen=True)
class GeneratingPolicy(CelPolicy):
    synchronize: bool = False

    def _result(self, outcome: Outcome, message: str, rule: str = "") -> RuleResult:
        fatal = outcome is Outcome.ERROR and self.failure_policy is FailurePolicy.FAIL
        return RuleResult(self.id, rule, outcome, message, Action.ENFORCE if fatal else Action.AUDIT)

    def _labels(self, request: AdmissionRequest, trigger: Mapping[str, Any]) -> dict[str, str]:
        meta = trigger.get("metadata") or {}
        labels = {
            "app.kubernetes.io/managed-by": "kyverno",
            "generate.kyverno.io/policy-name": self.id.name,
            "generate.kyverno.io/policy-namespace": self.id.namespace,
            "generate.kyverno.io/trigger-kind": request.kind.kind,
            "generate.kyverno.io/trigger-name": str(meta.get("name", "")),
            "generate.kyverno.io/trigger-namespace": request.namespace,
        }
        return {k: v for k, v in labels.items() if v}  # label values may not name what is not there

    async def validate(self, request: AdmissionRequest, obj: Mapping[str, Any], ctx: EvalContext) -> ValidationOutcome:
        variant = self.variant_for(request, request.object, ctx)
        if variant is None or request.object is None:
            return ValidationOutcome()
        result, generated = self._generate(request, ctx, variant)
        return ValidationOutcome(results=(result,), generates=tuple(generated))

    def _generate(self, request: AdmissionRequest, ctx: EvalContext, variant: Variant) -> tuple[RuleResult, list]:
        scope = self.scope(request, request.object, ctx, variant)
        try:
            found = self.check_exceptions(scope, request)
            if found.exempt:
                as_pass, message = exception_message(found.exempt)
                return self._result(Outcome.PASS if as_pass else Outcome.SKIP, message, "exception"), []
            scope.set("exceptions", found.allowed)
            if not variant.conditions.holds(scope, self.failure_policy):
                return self._result(Outcome.SKIP, "skip"), []
            created: list[Any] = []
            for generator in variant.body.generators:
                if isinstance(generator, GeneratedTemplate):
                    created.extend(generator.render(scope))
                else:
                    scope.evaluate(generator, generated=created)
        except (CelError, LookupRefused) as exc:
            return self._result(Outcome.ERROR, f"failed to generate: {exc}"), []
        labels = self._labels(request, request.object or {})
        generated = []
        for raw in created:
            if not isinstance(raw, Mapping) or not raw.get("kind") or not raw.get("apiVersion"):
                return self._result(Outcome.ERROR, "generator.Apply needs objects with apiVersion and kind"), []
            # apiVersion, kind, metadata first, as kubectl prints objects
            obj = {"apiVersion": raw["apiVersion"], "kind": raw["kind"], "metadata": {},
                   **{k: copy.deepcopy(v) for k, v in raw.items() if k not in ("apiVersion", "kind")}}
            meta = obj["metadata"] = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in SERVER_FIELDS}
            meta["labels"] = {**(meta.get("labels") or {}), **labels}
            refusal = generation_refusal(obj, self.id.namespace)  # a namespaced policy: its own namespace only
            if refusal is not None:
                return self._result(Outcome.ERROR, f"failed to generate: {refusal}"), []
            generated.append(obj)
        return self._result(Outcome.PASS, f"generated {len(generated)} object(s)"), generated
