"""Kubernetes admission policies: ValidatingAdmissionPolicy and MutatingAdmissionPolicy, joined with their
bindings. A policy without a binding does nothing (as in Kubernetes); a binding naming no policy is
reported as a load error of the binding."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from webhook.cel import CelCompiler
from webhook.families.cel import mutating, validating, validations
from webhook.families.cel.base import Variant, failure_policy, parse_match
from webhook.families.cel.compile import _common, _failure_policy_or_fail, variants
from webhook.families.cel.scope import MALFORMED, CompileFailed, as_failure
from webhook.families.cel.validating import Binding
from webhook.model.policy import Phase
from webhook.policy.documents import Document


def compile_binding(doc: Document, validating_kind: bool) -> tuple[str, Binding]:
    spec = doc.data.get("spec") or {}
    name = str((doc.data.get("metadata") or {}).get("name", ""))
    policy = spec.get("policyName")
    if not isinstance(policy, str) or not policy:
        raise CompileFailed("spec.policyName", "a binding must name its policy")
    actions = frozenset()
    if validating_kind:
        # required by the API server; a binding without one is taken as Deny, as the Kyverno CLI takes it
        actions = validations.parse_actions(spec.get("validationActions"), "spec.validationActions")
    match = parse_match(spec.get("matchResources"), "spec.matchResources") if spec.get("matchResources") is not None else None
    ref = spec.get("paramRef")
    if ref is not None and not isinstance(ref, Mapping):
        raise CompileFailed("spec.paramRef", "must be a mapping with name or selector")
    return policy, Binding(name, actions, match, ref)


def _param_kind(spec: Mapping[str, Any]) -> Mapping[str, str] | None:
    raw = spec.get("paramKind")
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or not raw.get("kind") or not raw.get("apiVersion"):
        raise CompileFailed("spec.paramKind", "needs apiVersion and kind")
    return {"apiVersion": str(raw["apiVersion"]), "kind": str(raw["kind"])}


def compile_vap(doc: Document, cel: CelCompiler, bindings: Sequence[Binding]) -> validating.ValidatingAdmissionPolicy:
    spec = doc.data.get("spec") or {}
    common = _common(doc, frozenset({Phase.VALIDATE}))
    try:
        found: tuple[Variant, ...] = variants(cel, spec, "admission", lambda s: validations.compile_body(cel, s, "admission"), None)
        return validating.ValidatingAdmissionPolicy(**common, failure_policy=failure_policy(spec), variants=found,
                                                    bindings=tuple(bindings), param_kind=_param_kind(spec))
    except MALFORMED as exc:
        exc = as_failure(exc)
        return validating.ValidatingAdmissionPolicy(**common, failure_policy=_failure_policy_or_fail(spec), error=f"{doc.file}#{doc.index} {exc.field}: {exc.message}")


def compile_map(doc: Document, cel: CelCompiler, bindings: Sequence[Binding]) -> mutating.MutatingAdmissionPolicy:
    spec = doc.data.get("spec") or {}
    common = _common(doc, frozenset({Phase.MUTATE}))
    try:
        found = variants(cel, spec, "admission", lambda s: mutating.compile_body(cel, s, "mutating"), None)
        return mutating.MutatingAdmissionPolicy(**common, failure_policy=failure_policy(spec), variants=found,
                                                bindings=tuple(bindings), param_kind=_param_kind(spec))
    except MALFORMED as exc:
        exc = as_failure(exc)
        return mutating.MutatingAdmissionPolicy(**common, failure_policy=_failure_policy_or_fail(spec), error=f"{doc.file}#{doc.index} {exc.field}: {exc.message}")
