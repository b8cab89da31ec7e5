"""A family whose kinds compile one document at a time, each into one policy (the platform batteries).

Compile errors of such a family refuse the whole set (strict), as schema errors do: these are the
platform team's own policies, checked by `quartermaster validate` in CI, and a refused set keeps
the previous snapshot serving rather than turning one typo into an `error` on every request.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

from webhook.model.errors import PolicyCompileError, PolicyLoadError
from webhook.model.policy import CompiledPolicy, PolicyId, SourceRef
from webhook.model.quickinit import frozen_dataclass
from webhook.policy.documents import Document
from webhook.policy.errors import compile_error
from webhook.policy.family import CompileEnv, FamilyResult, PolicyKind


@frozen_dataclass
class PolicyHeader:
    """What every compiled policy carries from its document's envelope."""

    id: PolicyId
    source: SourceRef
    annotations: Mapping[str, str]

    @classmethod
    def of(cls, doc: Document, namespaced: bool = False) -> "PolicyHeader":
        data = doc.data
        meta = data.get("metadata") or {}
        namespace = str(meta.get("namespace", "")) if namespaced else ""
        policy_id = PolicyId(str(data.get("apiVersion", "")), str(data.get("kind", "")), str(meta.get("name", "")), namespace)
        return cls(policy_id, SourceRef(doc.file, doc.index), dict(meta.get("annotations") or {}))


Compile = Callable[[Mapping[str, Any], PolicyHeader, CompileEnv], CompiledPolicy]


@frozen_dataclass
class DocumentKind:
    kind: PolicyKind
    compile: Compile  # raises PolicyCompileError for what the schema cannot catch


# a check across the family's compiled policies (what no document shows alone): (the policy, why it is refused)
SetCheck = Callable[[Sequence[CompiledPolicy]], Iterable[tuple[CompiledPolicy, PolicyCompileError]]]


class PerDocumentFamily:
    def __init__(self, name: str, kinds: Sequence[DocumentKind], set_checks: Sequence[SetCheck] = ()) -> None:
        self.name = name
        self.document_kinds = tuple(kinds)
        self.kinds = tuple(k.kind for k in kinds)
        self._compilers = {k.kind.key: k.compile for k in kinds}
        self._set_checks = tuple(set_checks)

    def compile(self, documents: Sequence[Document], env: CompileEnv) -> FamilyResult:
        policies: list[CompiledPolicy] = []
        errors: list[PolicyLoadError] = []
        for doc in documents:
            compiler = self._compilers[(doc.data["apiVersion"], doc.data["kind"])]
            try:
                policies.append(compiler(doc.data, PolicyHeader.of(doc), env))
            except PolicyCompileError as exc:
                errors.append(compile_error(doc, exc))
        by_source = {(doc.file, doc.index): doc for doc in documents}
        refused = [(policy, exc) for check in self._set_checks for policy, exc in check(policies)]
        for policy, exc in refused:  # the policy is left out, and its document told why
            errors.append(compile_error(by_source[(policy.source.file, policy.source.document)], exc))
        left_out = {id(policy) for policy, _ in refused}
        return FamilyResult(tuple(p for p in policies if id(p) not in left_out), tuple(errors))
