"""Fields many policy kinds share, and one matcher for them: label selectors, CEL match conditions,
failure policy and mode. Any family may use them; none has to."""

from __future__ import annotations

import copy
from typing import Any, Mapping

from webhook.cel import CelCompiler, CelError
from webhook.model.cluster import CLUSTER_SCOPED
from webhook.model.errors import PolicyCompileError
from webhook.model.policy import Condition, EvalContext, FailurePolicy
from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Action
from webhook.model.review import AdmissionRequest
from webhook.model.selectors import MATCH_ALL, LabelSelector, parse_selector

# --- schema fragments (JSON Schema 2020-12; also the CRD openAPIV3Schema in the Helm chart) -------
LABEL_SELECTOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
        "matchExpressions": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["key", "operator"],
                "properties": {
                    "key": {"type": "string", "minLength": 1},
                    "operator": {"type": "string", "enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                    "values": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    },
}

MATCH_CONDITIONS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "expression"],
        "properties": {"name": {"type": "string", "minLength": 1}, "expression": {"type": "string", "minLength": 1}},
    },
}

COMMON_SPEC_PROPERTIES: dict[str, Any] = {
    "namespaceSelector": LABEL_SELECTOR_SCHEMA,
    "objectSelector": LABEL_SELECTOR_SCHEMA,
    "matchConditions": MATCH_CONDITIONS_SCHEMA,
    "failurePolicy": {"type": "string", "enum": ["Fail", "Ignore"]},
    "mode": {"type": "string", "enum": ["Enforce", "Audit"]},
}

NAME_PATTERN = "^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"


def document_schema(api_version: str, kind: str, spec_properties: Mapping[str, Any],
                    required: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """A whole policy document: apiVersion/kind fixed, a named metadata, a spec with the common fields."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": api_version},
            "kind": {"const": kind},
            "metadata": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "pattern": NAME_PATTERN},
                    "namespace": {"type": "string"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            },
            "spec": {
                "type": "object",
                "additionalProperties": False,
                "required": list(required),
                "properties": {**copy.deepcopy(COMMON_SPEC_PROPERTIES), **spec_properties},
            },
        },
    }


# --- matching ----------------------------------------------------------------------------------------
@frozen_dataclass
class MatchSpec:
    """Cheap checks first: kind and operation, then selectors, then CEL conditions. No subresources."""

    kinds: frozenset[str]  # "Pod", "PersistentVolumeClaim", "*"
    operations: frozenset[str]
    namespace_selector: LabelSelector = MATCH_ALL
    object_selector: LabelSelector = MATCH_ALL
    namespaces: frozenset[str] = frozenset()  # empty: any
    exclude_namespaces: frozenset[str] = frozenset()
    conditions: tuple[Condition, ...] = ()

    def matches(self, request: AdmissionRequest, obj: Mapping[str, Any] | None, ctx: EvalContext) -> bool:
        """A condition that cannot be evaluated raises: the dispatcher applies the failure policy."""
        if not self.matches_statically(request, obj, ctx.namespace):
            return False
        if not self.conditions:
            return True
        activation = ctx.activation(obj)
        return all(condition(activation) for condition in self.conditions)

    def matches_statically(self, request: AdmissionRequest, obj: Mapping[str, Any] | None,
                           namespace: Mapping[str, Any] | None) -> bool:
        if request.sub_resource:
            return False
        kind = request.kind.kind
        if "*" not in self.kinds and kind not in self.kinds:
            return False
        if request.operation not in self.operations:
            return False
        subject = obj if obj is not None else (request.old_object or {})
        if kind not in CLUSTER_SCOPED:  # namespaced kinds (pods, claims): the common case first
            ns_labels = ((namespace or {}).get("metadata") or {}).get("labels")
            if not self.matches_namespace_name(request.namespace):
                return False
            if not self.namespace_selector.matches(ns_labels):
                return False
            return self.object_selector.matches((subject.get("metadata") or {}).get("labels"))
        if kind == "Namespace":
            ns_name = (subject.get("metadata") or {}).get("name", "")
            ns_labels = (subject.get("metadata") or {}).get("labels")
        else:
            ns_name, ns_labels = "", None
        if not self.matches_namespace_name(ns_name):
            return False
        if ns_labels is not None and not self.namespace_selector.matches(ns_labels):
            return False
        return self.object_selector.matches((subject.get("metadata") or {}).get("labels"))

    def matches_namespace_name(self, name: str) -> bool:
        return (not self.namespaces or name in self.namespaces) and name not in self.exclude_namespaces


class SpecMatched:
    """Mixin for policies whose matching is a MatchSpec in their `match` attribute."""

    match: MatchSpec

    def matches(self, request: AdmissionRequest, obj: Mapping[str, Any] | None, ctx: EvalContext) -> bool:
        return self.match.matches(request, obj, ctx)


# --- compiling the common fields -------------------------------------------------------------------
def compile_selector(raw: Mapping[str, Any] | None, field: str) -> LabelSelector:
    try:
        return parse_selector(raw)
    except ValueError as exc:
        raise PolicyCompileError(field, str(exc)) from None


def compile_match(spec: Mapping[str, Any], cel: CelCompiler, kinds: frozenset[str], operations: frozenset[str],
                  default_namespace_selector: Mapping[str, Any] | None = None) -> MatchSpec:
    """Kinds and operations are the kind's own; selectors and CEL conditions come from the YAML."""
    conditions = []
    for index, condition in enumerate(spec.get("matchConditions") or []):
        try:
            conditions.append(cel.compile(condition["expression"], env="admission"))
        except CelError as exc:
            raise PolicyCompileError(f"spec.matchConditions[{index}].expression", str(exc)) from None
    namespace_selector = spec.get("namespaceSelector", default_namespace_selector)
    return MatchSpec(
        kinds=kinds,
        operations=operations,
        namespace_selector=compile_selector(namespace_selector, "spec.namespaceSelector"),
        object_selector=compile_selector(spec.get("objectSelector"), "spec.objectSelector"),
        conditions=tuple(conditions),
    )


def failure_policy(spec: Mapping[str, Any], default: FailurePolicy = FailurePolicy.FAIL) -> FailurePolicy:
    return FailurePolicy(spec["failurePolicy"]) if "failurePolicy" in spec else default


def action(spec: Mapping[str, Any]) -> Action:
    return Action(spec.get("mode", "Enforce"))
