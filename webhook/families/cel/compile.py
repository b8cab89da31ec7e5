"""Compile one CEL policy document into its compiled policy (errors kept on the policy as a value)."""

from __future__ import annotations

from datetime import datetime
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

from webhook.cel import CelCompiler
from webhook.cel.estimate import policy_problem, policy_total
from webhook.families.cel import autogen, generating, mutating, validating, validations
from webhook.families.cel.base import (CelPolicy, Conditions, Exception_, Variant, enabled, failure_policy,
                                       parse_match, spec_value, timeout)
from webhook.families.cel.kyverno_checks import check_kyverno_spec, check_namespaced_expressions
from webhook.families.cel.scope import (MALFORMED, CompileFailed, Expr, Variables, as_failure,
                                        check_variable_refs, compiled_exprs)
from webhook.model.exception_trust import ANY_RESOURCE
from webhook.model.policy import FailurePolicy, Phase, PolicyId, SourceRef
from webhook.policy.documents import Document

KYVERNO_GROUP = "policies.kyverno.io"
NAMESPACED = {"NamespacedValidatingPolicy", "NamespacedMutatingPolicy", "NamespacedGeneratingPolicy"}


def identity(doc: Document) -> PolicyId:
    data = doc.data
    meta = data.get("metadata") or {}
    # a cluster-scoped kind ignores metadata.namespace, as the API server does
    namespace = str(meta.get("namespace") or "default") if data["kind"] in NAMESPACED else ""
    return PolicyId(data["apiVersion"], data["kind"], str(meta.get("name", "")), namespace)


ExprCheck = Callable[[Sequence[Expr]], None]  # raises CompileFailed for what a policy may not use


def _variant(cel: CelCompiler, spec: Mapping[str, Any], env: str, body: Callable[[Mapping[str, Any]], Any],
             config: str = "", check: ExprCheck | None = None) -> Variant:
    with compiled_exprs() as exprs:
        variant = Variant(parse_match(spec.get("matchConstraints"), "spec.matchConstraints"),
                          Conditions.compile(cel, spec.get("matchConditions"), "spec.matchConditions", env),
                          Variables.compile(cel, spec.get("variables"), "spec.variables", env), body(spec), config)
    check_variable_refs(exprs, variant.variables.order, "spec.variables")
    if check is not None:
        check(exprs)
    return variant


def variants(cel: CelCompiler, spec: Mapping[str, Any], env: str, body: Callable[[Mapping[str, Any]], Any],
             rewrite: Callable[[dict[str, Any], str], None] | None, check: ExprCheck | None = None
             ) -> tuple[Variant, ...]:
    return variants_and_copies(cel, spec, env, body, rewrite, check)[0]


def variants_and_copies(cel: CelCompiler, spec: Mapping[str, Any], env: str, body: Callable[[Mapping[str, Any]], Any],
                        rewrite: Callable[[dict[str, Any], str], None] | None, check: ExprCheck | None = None
                        ) -> tuple[tuple[Variant, ...], list[autogen.AutogenVariant]]:
    """The compiled variants, and the copies autogen made of the spec (what `status.autogen` shows). `check` sees
    every expression of the spec as written (the copies are the same expressions, rewritten)."""
    with policy_total() as total:
        out = [_variant(cel, spec, env, body, check=check)]
    problem = policy_problem(total[0])  # the variants autogen adds are the same expressions, rewritten
    if problem is not None:
        raise CompileFailed("spec", problem)
    copies = autogen.variants(spec, rewrite) if rewrite is not None else []
    for generated in copies:
        out.append(_variant(cel, generated.spec, env, body, generated.config))
    return tuple(out), copies


def _common(doc: Document, phases: frozenset[Phase]) -> dict[str, Any]:
    data = doc.data
    meta = data.get("metadata") or {}
    return {"id": identity(doc), "source": SourceRef(doc.file, doc.index), "phases": phases,
            "annotations": {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()}
            if isinstance(meta.get("annotations"), Mapping) else {}}


def compile_kyverno(doc: Document, cel: CelCompiler, exceptions: Sequence[Exception_]) -> CelPolicy:
    """ValidatingPolicy, MutatingPolicy, GeneratingPolicy and their namespaced variants."""
    kind = doc.data["kind"].removeprefix("Namespaced")
    spec = doc.data.get("spec") or {}
    phases = frozenset({Phase.MUTATE}) if kind == "MutatingPolicy" else frozenset({Phase.VALIDATE})
    common = _common(doc, phases)
    cls: type[CelPolicy] = {"ValidatingPolicy": validating.ValidatingPolicy, "MutatingPolicy": mutating.MutatingPolicy,
                            "GeneratingPolicy": generating.GeneratingPolicy}[kind]
    try:
        if not isinstance(spec, Mapping):
            raise CompileFailed("spec", "must be a mapping")
        check_kyverno_spec(kind, spec)
        check = check_namespaced_expressions if common["id"].namespace else None
        extra: dict[str, Any] = {}
        if kind == "ValidatingPolicy":
            found, copies = variants_and_copies(cel, spec, "kyverno", lambda s: validations.compile_body(cel, s, "kyverno"),
                                                autogen.rewrite_validating, check)
            extra["actions"] = validations.parse_actions(spec.get("validationActions"), "spec.validationActions")
            extra["shown"] = _autogen_status(copies)
        elif kind == "MutatingPolicy":
            _refuse_audit_annotations(spec)
            found, copies = variants_and_copies(cel, spec, "kyverno", lambda s: mutating.compile_body(cel, s, "kyverno"),
                                                autogen.rewrite_mutating, check)
            extra["shown"] = _autogen_status(copies)
            extra["server_side_apply"] = _flag(spec, "spec.evaluation.useServerSideApply", "evaluation", "useServerSideApply")
        else:
            _refuse_audit_annotations(spec)
            if _flag(spec, "spec.useServerSideApply", "useServerSideApply"):
                raise CompileFailed("spec.useServerSideApply", "server-side apply of generated resources is not "
                                    "supported: they are created and updated (leave it out or set it false)")
            found = variants(cel, spec, "kyverno", lambda s: generating.compile_body(cel, s), None, check)
            extra["synchronize"] = enabled(spec, "evaluation", "synchronize", "enabled", default=False)
        return cls(**common, failure_policy=failure_policy(spec), variants=found, exceptions=tuple(exceptions),
                   background=enabled(spec, "evaluation", "background", "enabled"),
                   admission=_admission(spec), timeout=timeout(spec), **extra)
    except MALFORMED as exc:  # the failure policy still governs a broken policy, if it can be read
        exc = as_failure(exc)
        return cls(**common, failure_policy=_failure_policy_or_fail(spec),
                   error=f"{doc.file}#{doc.index} {exc.field}: {exc.message}")


def _flag(spec: Mapping[str, Any], field: str, *path: str) -> bool:
    """An optional boolean of the spec (false when absent)."""
    node = spec_value(spec, *path)
    if node is not None and not isinstance(node, bool):
        raise CompileFailed(field, "must be true or false")
    return node is True


def _refuse_audit_annotations(spec: Mapping[str, Any]) -> None:
    """Kyverno 1.19's auditAnnotations of a MutatingPolicy or GeneratingPolicy (values attached to the report
    results or the audit event): not evaluated here, so a policy that has them does not load rather than load
    without them."""
    if spec.get("auditAnnotations"):
        raise CompileFailed("spec.auditAnnotations", "auditAnnotations of a MutatingPolicy or GeneratingPolicy are "
                            "not supported (a ValidatingPolicy's are)")


def _autogen_status(copies: Sequence[autogen.AutogenVariant]) -> Mapping[str, Any]:
    """`status.autogen` as Kyverno writes it for a CEL policy: each generated copy's spec under its config name
    (`defaults`: the pod controllers with `spec.template`; `cronjobs`), as a merge patch (null: none)."""
    # `targets` is required by Kyverno's CRD: without it the API server refuses the whole status patch
    configs = {v.config: {"spec": v.spec, "targets": [dict(t) for t in v.targets]} for v in copies}
    return MappingProxyType({"autogen": {"configs": configs or None}})


def _failure_policy_or_fail(spec: Any) -> FailurePolicy:
    try:
        return failure_policy(spec) if isinstance(spec, Mapping) else FailurePolicy.FAIL
    except MALFORMED:
        return FailurePolicy.FAIL


def _admission(spec: Mapping[str, Any]) -> bool:
    """Whether the policy takes part in admission: evaluation.admission.enabled, and not a JSON-payload policy
    (evaluation.mode: JSON validates arbitrary JSON, never Kubernetes requests)."""
    mode = (spec.get("evaluation") or {}).get("mode") or "Kubernetes"
    if mode not in ("Kubernetes", "JSON"):
        raise CompileFailed("spec.evaluation.mode", "must be Kubernetes or JSON")
    return mode == "Kubernetes" and enabled(spec, "evaluation", "admission", "enabled")


def compile_exception(doc: Document, cel: CelCompiler,
                      reach: str = ANY_RESOURCE) -> tuple[list[tuple[str, str]], Exception_]:
    """A policies.kyverno.io PolicyException: the (kind, name) it applies to, and its compiled conditions.
    `reach`: the namespace whose resources it may exempt ("" any: ExceptionTrust.reach)."""
    spec = doc.data.get("spec") or {}
    meta = doc.data.get("metadata") or {}
    refs = []
    for i, ref in enumerate(spec.get("policyRefs") or []):
        if not isinstance(ref, Mapping) or not ref.get("name"):
            raise CompileFailed(f"spec.policyRefs[{i}].name", "a policy reference needs a name (and kind)")
        refs.append((str(ref.get("kind") or ""), str(ref["name"])))
    if not refs:
        raise CompileFailed("spec.policyRefs", "an exception must name at least one policy")
    conditions = Conditions.compile(cel, spec.get("matchConditions"), "spec.matchConditions", "kyverno")
    report = spec.get("reportResult")
    return refs, Exception_(str(meta.get("name", "")), str(meta.get("namespace") or ""), conditions,
                            tuple(spec.get("images") or ()), tuple(spec.get("allowedValues") or ()), report == "pass",
                            reach, _expires_at(spec.get("expiresAt")))


def _expires_at(value: Any) -> float | None:
    """spec.expiresAt (Kyverno 1.19+), an RFC 3339 time: the exception applies to no request after it."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise CompileFailed("spec.expiresAt", f"{value!r} is not an RFC 3339 time such as 2026-05-01T00:00:00Z")
    return moment.timestamp()
