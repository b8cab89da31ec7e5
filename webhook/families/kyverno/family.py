"""The "kyverno" policy family: ``kyverno.io`` ClusterPolicy/Policy with their PolicyExceptions.

All documents compile together so exceptions join the policies they name. A policy takes part in the mutate
phase when it has mutate rules and in the validate phase when it has validate or generate rules; each rule
reports under its own name (``autogen-`` rules included), as Kyverno does.
"""

from __future__ import annotations

from typing import Any, Sequence

from webhook.model.errors import PolicyLoadError
from webhook.policy.documents import Document
from webhook.policy.family import CompileEnv, FamilyResult, PolicyKind
from webhook.policy.published import published_schema

from .compile import API_VERSIONS, POLICY_KINDS, PolicyError, compile_policy
from .exceptions import API_VERSIONS as EXCEPTION_VERSIONS, ExceptionError, PolicyException, compile_exception
from .policy import KyvernoCompiledPolicy

# each document is held to Kyverno's published CRD schema (policy/published.py): unknown fields are errors
KINDS = tuple(PolicyKind(v, k, published_schema(v, k)) for v in API_VERSIONS for k in POLICY_KINDS) + tuple(
    PolicyKind(v, "PolicyException", published_schema(v, "PolicyException")) for v in EXCEPTION_VERSIONS)


def _error(doc: Document, message: str) -> PolicyLoadError:
    field = ""
    line = None
    if " rule " in message:
        rule = message.split(" rule ", 1)[1].split(":", 1)[0]
        rules = (doc.data.get("spec") or {}).get("rules") or []
        index = next((i for i, r in enumerate(rules) if isinstance(r, dict) and r.get("name") == rule), None)
        if index is not None:
            field = f"spec.rules[{index}]"
            line = doc.line_of(["spec", "rules", index])
    return PolicyLoadError(doc.file, doc.index, line if line else doc.line_of(["spec"]), field, message)


class KyvernoFamily:
    name = "kyverno"
    kinds = KINDS

    def compile(self, documents: Sequence[Document], env: CompileEnv) -> FamilyResult:
        errors: list[PolicyLoadError] = []
        exceptions: list[PolicyException] = []
        for doc in documents:
            if isinstance(doc.data, dict) and doc.data.get("kind") == "PolicyException":
                try:
                    namespace = str((doc.data.get("metadata") or {}).get("namespace") or "")
                    reach = env.exceptions.reach(namespace)
                    if reach is None:  # from a namespace the platform does not trust
                        errors.append(PolicyLoadError(doc.file, doc.index, doc.line_of(["metadata"]), "metadata.namespace",
                                                      env.exceptions.refusal(namespace)))
                        continue
                    exceptions.append(compile_exception(doc.data, reach))
                except ExceptionError as exc:
                    errors.append(PolicyLoadError(doc.file, doc.index, doc.line_of(["spec"]), "spec", str(exc)))
        policies = []
        for doc in documents:
            if not isinstance(doc.data, dict) or doc.data.get("kind") not in POLICY_KINDS:
                continue
            try:
                compiled = compile_policy(doc.data, env.cel)
            except PolicyError as exc:
                errors.append(_error(doc, str(exc)))
                continue
            key = f"{compiled.namespace}/{compiled.name}" if compiled.namespace else compiled.name
            joined = tuple(e for e in exceptions if e.names(key))
            policy = KyvernoCompiledPolicy.of(compiled, doc, joined)
            policies.append(policy)
        return FamilyResult(tuple(policies), tuple(errors))


def kyverno_family() -> Any:
    return KyvernoFamily()
