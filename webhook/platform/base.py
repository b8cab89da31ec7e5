"""What every platform policy kind shares: the document envelope, match fields, modes, profiles."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Mapping

from webhook.cel import CelCompiler, CelError
from webhook.model.errors import PolicyCompileError
from webhook.model.policy import FailurePolicy, MatchSpec
from webhook.model.results import Action
from webhook.model.selectors import LabelSelector, parse_selector

API_VERSION = "quartermaster.dev/v1alpha1"
PROFILE_LABEL = "app.kubernetes.io/part-of"
PROFILE_LABEL_VALUE = "kubeflow-profile"
DEFAULT_PROFILE_SELECTOR = {"matchLabels": {PROFILE_LABEL: PROFILE_LABEL_VALUE}}
OWNER_ANNOTATION = "owner"
CLASS_LABEL = "quartermaster.dev/profile-class"

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


def document_schema(kind: str, spec_properties: Mapping[str, Any], required: list[str] = ()) -> dict[str, Any]:
    """The whole policy document: apiVersion/kind fixed, a named metadata, a spec with the common fields."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": API_VERSION},
            "kind": {"const": kind},
            "metadata": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"},
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
            conditions.append(cel.compile(condition["expression"]))
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


# --- profiles --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProfileInfo:
    """A Kubeflow profile namespace, as the batteries see it."""

    namespace: str
    owner: str  # the owner annotation, an e-mail; "" when absent
    profile_class: str

    @property
    def user(self) -> str:
        """The local part of the owner's e-mail ("jdoe" for jdoe@cern.ch); "" when there is no usable owner."""
        local = self.owner.split("@", 1)[0].strip() if "@" in self.owner else ""
        return local

    @property
    def user_initial(self) -> str:
        return self.user[:1]


def profile_info(namespace: Mapping[str, Any] | None, namespace_name: str = "") -> ProfileInfo:
    meta = (namespace or {}).get("metadata") or {}
    return ProfileInfo(
        namespace=meta.get("name", namespace_name),
        owner=str((meta.get("annotations") or {}).get(OWNER_ANNOTATION, "")),
        profile_class=str((meta.get("labels") or {}).get(CLASS_LABEL, "personal")) or "personal",
    )
