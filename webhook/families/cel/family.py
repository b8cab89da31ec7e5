"""The "cel" policy family: Kyverno's CEL policies (policies.kyverno.io) and Kubernetes' admission
policies (admissionregistration.k8s.io), compiled together so bindings, params and exceptions join
their policies."""

from __future__ import annotations

from typing import Sequence

from webhook.families.cel.admission import compile_binding, compile_map, compile_vap
from webhook.families.cel.base import Exception_
from webhook.families.cel.compile import KYVERNO_GROUP, compile_exception, compile_kyverno
from webhook.families.cel.plan import plan
from webhook.families.cel.scope import MALFORMED, as_failure
from webhook.families.cel.validating import Binding
from webhook.model.errors import PolicyLoadError
from webhook.model.policy import CompiledPolicy
from webhook.policy.documents import Document
from webhook.policy.family import CompileEnv, FamilyResult, PolicyKind
from webhook.policy.published import published_schema

KYVERNO_KINDS = ("ValidatingPolicy", "NamespacedValidatingPolicy", "MutatingPolicy", "NamespacedMutatingPolicy",
                 "GeneratingPolicy", "NamespacedGeneratingPolicy", "PolicyException")
ADMISSION = "admissionregistration.k8s.io"
MAP_VERSIONS = ("v1alpha1", "v1beta1", "v1")


def _kind(api_version: str, kind: str) -> PolicyKind:
    # the loader holds every document to its publisher's schema (policy/published.py): unknown fields are errors
    return PolicyKind(api_version, kind, published_schema(api_version, kind))


def _kinds() -> tuple[PolicyKind, ...]:
    out = [_kind(f"{KYVERNO_GROUP}/{v}", k) for v in ("v1alpha1", "v1beta1", "v1") for k in KYVERNO_KINDS]
    out += [_kind(f"{ADMISSION}/v1", k) for k in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")]
    out += [_kind(f"{ADMISSION}/{v}", k) for v in MAP_VERSIONS
            for k in ("MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding")]
    return tuple(out)


def _load_error(doc: Document, field: str, message: str) -> PolicyLoadError:
    path = [p for p in field.replace("]", "").replace("[", ".").split(".") if p]
    steps = [int(p) if p.isdigit() else p for p in path]
    return PolicyLoadError(doc.file, doc.index, doc.line_of(steps), field, message)


class CelFamily:
    name = "cel"
    kinds = _kinds()

    def compile(self, documents: Sequence[Document], env: CompileEnv) -> FamilyResult:
        errors: list[PolicyLoadError] = []
        for doc in documents:
            meta = doc.data.get("metadata") if isinstance(doc.data, dict) else None
            if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
                errors.append(_load_error(doc, "metadata.name", "every policy document needs metadata.name"))
        if errors:
            return FamilyResult((), tuple(errors))
        exceptions: dict[tuple[str, str], list[Exception_]] = {}
        bindings: dict[tuple[str, str], list[Binding]] = {}
        for doc in documents:
            kind = doc.data["kind"]
            try:
                if kind == "PolicyException":
                    namespace = str(doc.data["metadata"].get("namespace") or "")
                    reach = env.exceptions.reach(namespace)
                    if reach is None:  # from a namespace the platform does not trust
                        errors.append(_load_error(doc, "metadata.namespace", env.exceptions.refusal(namespace)))
                        continue
                    refs, exception = compile_exception(doc, env.cel, reach)
                    for ref in refs:
                        exceptions.setdefault(ref, []).append(exception)
                elif kind.endswith("Binding"):
                    policy, binding = compile_binding(doc, kind.startswith("Validating"))
                    bindings.setdefault((kind.removesuffix("Binding"), policy), []).append(binding)
            except MALFORMED as exc:
                failure = as_failure(exc)
                errors.append(_load_error(doc, failure.field, failure.message))
        policies: list[CompiledPolicy] = []
        for doc in documents:
            kind, name = doc.data["kind"], doc.data["metadata"]["name"]
            if kind in ("ValidatingAdmissionPolicy", "MutatingAdmissionPolicy"):
                compile_ = compile_vap if kind == "ValidatingAdmissionPolicy" else compile_map
                policies.append(compile_(doc, env.cel, bindings.pop((kind, name), [])))
            elif kind != "PolicyException" and not kind.endswith("Binding"):
                joined = exceptions.get((kind, name), []) + exceptions.get(("", name), [])
                policies.append(compile_kyverno(doc, env.cel, joined))
        # each policy's route on the request path, decided once for the set (webhook.families.cel.plan)
        return FamilyResult(plan(policies, env.cel, env.cel_evaluation), tuple(errors))
