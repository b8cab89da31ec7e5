"""Two small policy kinds for testing the core on its own (the batteries have their own tests)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Mapping

from webhook.cel import CelCompiler
from webhook.model.errors import PolicyCompileError
from webhook.model.policy import (EvalContext, FailurePolicy, MatchSpec, MutationOutcome, Phase, SourceRef,
                                  ValidationOutcome)
from webhook.model.results import failed, passed
from webhook.model.review import AdmissionRequest
from webhook.platform.base import action, compile_match, document_schema, failure_policy
from webhook.policy.kinds import KindRegistry, PolicyKind

API = "quartermaster.dev/v1alpha1"


@dataclass(frozen=True)
class RequireLabel:
    name: str
    source: SourceRef
    match: MatchSpec
    failure_policy: FailurePolicy
    label: str
    spec: Mapping[str, Any]
    kind: str = "RequireLabel"
    phase: Phase = Phase.VALIDATE

    async def validate(self, request: AdmissionRequest, obj: Mapping[str, Any], ctx: EvalContext) -> ValidationOutcome:
        if self.spec.get("sleepSeconds"):
            await asyncio.sleep(self.spec["sleepSeconds"])
        if self.spec.get("raise"):
            raise RuntimeError("boom")
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if self.label in labels:
            return ValidationOutcome((passed(self.name, "has-label"),))
        return ValidationOutcome((failed(self.name, "has-label", f"add the label {self.label}", action(self.spec)),))


@dataclass(frozen=True)
class AddLabel:
    name: str
    source: SourceRef
    match: MatchSpec
    failure_policy: FailurePolicy
    key: str
    value: str
    kind: str = "AddLabel"
    phase: Phase = Phase.MUTATE

    async def mutate(self, request: AdmissionRequest, obj: dict[str, Any], ctx: EvalContext) -> MutationOutcome:
        obj.setdefault("metadata", {}).setdefault("labels", {})[self.key] = self.value
        return MutationOutcome(obj, (passed(self.name, "add-label"),))


def _compile_require(doc: Mapping[str, Any], source: SourceRef, cel: CelCompiler) -> RequireLabel:
    spec = doc["spec"]
    if spec["label"].startswith("-"):
        raise PolicyCompileError("spec.label", "must not start with '-'")
    return RequireLabel(doc["metadata"]["name"], source, compile_match(spec, cel, frozenset({"Pod"}), frozenset({"CREATE"})),
                        failure_policy(spec), spec["label"], spec)


def _compile_add(doc: Mapping[str, Any], source: SourceRef, cel: CelCompiler) -> AddLabel:
    spec = doc["spec"]
    return AddLabel(doc["metadata"]["name"], source, compile_match(spec, cel, frozenset({"Pod"}), frozenset({"CREATE"})),
                    failure_policy(spec), spec["key"], spec["value"])


REQUIRE_LABEL = PolicyKind(API, "RequireLabel", document_schema("RequireLabel", {
    "label": {"type": "string", "minLength": 1}, "sleepSeconds": {"type": "number"}, "raise": {"type": "boolean"}},
    required=["label"]), _compile_require)
ADD_LABEL = PolicyKind(API, "AddLabel", document_schema("AddLabel", {
    "key": {"type": "string"}, "value": {"type": "string"}}, required=["key", "value"]), _compile_add)


def test_registry() -> KindRegistry:
    return KindRegistry([REQUIRE_LABEL, ADD_LABEL])


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
