"""A small policy family for testing the seam: `Gate` policies joined with their `GateBinding`s.

Like ValidatingAdmissionPolicy + binding, a Gate does nothing until a binding names it, so the family
must see the whole document set. A Gate whose expression does not compile is kept with `.error`
(lenient), an unknown binding target is a set-level error. A Gate with `mutate: true` takes part in
both phases; `subresources: true` lets its matcher accept subresource requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from webhook.cel import CelError
from webhook.model.errors import PolicyLoadError
from webhook.model.policy import (EvalContext, FailurePolicy, MutationOutcome, Phase, PolicyId, PolicyTraits, SourceRef,
                                  ValidationOutcome)
from webhook.model.results import failed, passed, warned
from webhook.model.review import AdmissionRequest
from webhook.policy.documents import Document
from webhook.policy.errors import document_error
from webhook.policy.family import CompileEnv, FamilyResult, PolicyKind
from webhook.policy.perdocument import PolicyHeader

API = "gates.example.org/v1"
GATE = PolicyKind(API, "Gate", None)
BINDING = PolicyKind(API, "GateBinding", None)


@dataclass(frozen=True)
class Gate:
    id: PolicyId
    source: SourceRef
    failure_policy: FailurePolicy
    spec: Mapping[str, Any]
    program: Any
    error: str | None = None
    annotations: Mapping[str, str] = field(default_factory=dict)
    background: bool = True
    phases: frozenset[Phase] = frozenset({Phase.VALIDATE})
    seen: list[Any] = field(default_factory=list, compare=False)  # what matches() was given, for the tests
    traits: PolicyTraits = PolicyTraits()

    def matches(self, request: AdmissionRequest, obj: Mapping[str, Any] | None, ctx: EvalContext) -> bool:
        self.seen.append(ctx.activation(obj))
        if request.sub_resource and not self.spec.get("subresources"):
            return False
        return request.kind.kind in self.spec.get("kinds", ["Pod"])

    async def mutate(self, request: AdmissionRequest, obj: dict[str, Any], ctx: EvalContext) -> MutationOutcome:
        obj.setdefault("metadata", {}).setdefault("labels", {})["gated"] = "yes"
        return MutationOutcome(obj, (passed(self.id, "label"),))

    async def validate(self, request: AdmissionRequest, obj: Mapping[str, Any], ctx: EvalContext) -> ValidationOutcome:
        if self.program(ctx.activation(obj)):
            return ValidationOutcome((passed(self.id, "check"),), generates=tuple(self.spec.get("generates", ())))
        if self.spec.get("warnOnly"):
            return ValidationOutcome((warned(self.id, "check", self.spec["message"]),))
        return ValidationOutcome((failed(self.id, "check", self.spec["message"]),))


def _key(doc: Document, name: str) -> tuple[str, str]:
    return (str(doc.data["metadata"].get("namespace", "")), name)


class GateFamily:
    name = "gates"
    kinds = (GATE, BINDING)

    def __init__(self, on_compile: Callable[[Sequence[Document]], None] | None = None) -> None:
        self.on_compile = on_compile

    def compile(self, documents: Sequence[Document], env: CompileEnv) -> FamilyResult:
        if self.on_compile:
            self.on_compile(documents)
        gates = {_key(d, d.data["metadata"]["name"]): d for d in documents if d.data["kind"] == "Gate"}
        bound: dict[tuple[str, str], Document] = {}
        errors: list[PolicyLoadError] = []
        for doc in (d for d in documents if d.data["kind"] == "GateBinding"):
            target = _key(doc, doc.data["spec"]["gate"])
            if target not in gates:
                errors.append(document_error(doc, "spec.gate", f"no Gate named {target[1]!r}"))
            bound[target] = doc
        policies = tuple(self._gate(gates[key], bound[key], env) for key in gates if key in bound)
        return FamilyResult(policies, tuple(errors))

    @staticmethod
    def _gate(doc: Document, binding: Document, env: CompileEnv) -> Gate:
        header, spec = PolicyHeader.of(doc, namespaced=True), doc.data["spec"]
        failure = FailurePolicy(binding.data["spec"].get("failurePolicy", "Fail"))
        phases = frozenset({Phase.VALIDATE, Phase.MUTATE}) if spec.get("mutate") else frozenset({Phase.VALIDATE})
        try:
            program, error = env.cel.compile(spec["expression"]), None
        except CelError as exc:
            program, error = None, str(exc)
        return Gate(header.id, header.source, failure, spec, program, error, header.annotations,
                    background=spec.get("background", True), phases=phases)


def gate(name: str, expression: str, binding: Mapping[str, Any] | None = None, **spec: Any) -> str:
    import yaml

    docs = [{"apiVersion": API, "kind": "Gate", "metadata": {"name": name},
             "spec": {"expression": expression, "message": f"{name} says no", **spec}},
            {"apiVersion": API, "kind": "GateBinding", "metadata": {"name": f"{name}-binding"},
             "spec": {"gate": name, **(binding or {})}}]
    return yaml.safe_dump_all(docs, sort_keys=False)
