"""Two small policy kinds for testing the core on its own (the batteries have their own tests)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Mapping

from webhook.model.errors import PolicyCompileError
from webhook.model.policy import (EvalContext, FailurePolicy, MutationOutcome, Phase, PolicyId, PolicyTraits, SourceRef,
                                  ValidationOutcome)
from webhook.model.results import failed, passed
from webhook.model.review import AdmissionRequest
from webhook.policy.common import MatchSpec, SpecMatched, action, compile_match, document_schema, failure_policy
from webhook.policy.family import CompileEnv, FamilyRegistry, PolicyKind
from webhook.policy.perdocument import DocumentKind, PerDocumentFamily, PolicyHeader

API = "quartermaster.dev/v1alpha1"


class TestPolicy(SpecMatched):
    error = None
    background = True
    traits = PolicyTraits()

    @property
    def name(self) -> str:
        return self.id.name  # type: ignore[attr-defined]


TestPolicy.__test__ = False  # type: ignore[attr-defined]


@dataclass(frozen=True)
class RequireLabel(TestPolicy):
    id: PolicyId
    source: SourceRef
    match: MatchSpec
    failure_policy: FailurePolicy
    label: str
    spec: Mapping[str, Any]
    annotations: Mapping[str, str] = field(default_factory=dict)
    phases = frozenset({Phase.VALIDATE})

    async def validate(self, request: AdmissionRequest, obj: Mapping[str, Any], ctx: EvalContext) -> ValidationOutcome:
        if self.spec.get("sleepSeconds"):
            await asyncio.sleep(self.spec["sleepSeconds"])
        if self.spec.get("raise"):
            raise RuntimeError("boom")
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if self.label in labels:
            return ValidationOutcome((passed(self.id, "has-label"),))
        return ValidationOutcome((failed(self.id, "has-label", f"add the label {self.label}", action(self.spec)),))


@dataclass(frozen=True)
class AddLabel(TestPolicy):
    id: PolicyId
    source: SourceRef
    match: MatchSpec
    failure_policy: FailurePolicy
    key: str
    value: str
    annotations: Mapping[str, str] = field(default_factory=dict)
    phases = frozenset({Phase.MUTATE})

    async def mutate(self, request: AdmissionRequest, obj: dict[str, Any], ctx: EvalContext) -> MutationOutcome:
        obj.setdefault("metadata", {}).setdefault("labels", {})[self.key] = self.value
        return MutationOutcome(obj, (passed(self.id, "add-label"),))


def _compile_require(doc: Mapping[str, Any], header: PolicyHeader, env: CompileEnv) -> RequireLabel:
    spec = doc["spec"]
    if spec["label"].startswith("-"):
        raise PolicyCompileError("spec.label", "must not start with '-'")
    return RequireLabel(header.id, header.source, compile_match(spec, env.cel, frozenset({"Pod"}), frozenset({"CREATE"})),
                        failure_policy(spec), spec["label"], spec, header.annotations)


def _compile_add(doc: Mapping[str, Any], header: PolicyHeader, env: CompileEnv) -> AddLabel:
    spec = doc["spec"]
    return AddLabel(header.id, header.source, compile_match(spec, env.cel, frozenset({"Pod"}), frozenset({"CREATE"})),
                    failure_policy(spec), spec["key"], spec["value"], header.annotations)


REQUIRE_LABEL = DocumentKind(PolicyKind(API, "RequireLabel", document_schema(API, "RequireLabel", {
    "label": {"type": "string", "minLength": 1}, "sleepSeconds": {"type": "number"}, "raise": {"type": "boolean"}},
    required=["label"])), _compile_require)
ADD_LABEL = DocumentKind(PolicyKind(API, "AddLabel", document_schema(API, "AddLabel", {
    "key": {"type": "string"}, "value": {"type": "string"}}, required=["key", "value"])), _compile_add)


def test_family() -> PerDocumentFamily:
    return PerDocumentFamily("test", [REQUIRE_LABEL, ADD_LABEL])


def test_registry(ledgers: Any = None) -> FamilyRegistry:
    """`ledgers` is accepted (and unused) so this can stand in for webhook.app.build_registry."""
    return FamilyRegistry([test_family()])


test_family.__test__ = False  # type: ignore[attr-defined]


test_registry.__test__ = False  # type: ignore[attr-defined]

REQUIRE_TEAM = """\
apiVersion: quartermaster.dev/v1alpha1
kind: RequireLabel
metadata:
  name: require-team
spec:
  label: team
"""

ADD_ZONE = """\
apiVersion: quartermaster.dev/v1alpha1
kind: AddLabel
metadata:
  name: add-zone
spec:
  key: example.org/zone~a
  value: b
"""


def pod(name: str = "p", namespace: str = "jdoe", labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": {"containers": [{"name": "main", "image": "python:3.12"}], **spec}}
