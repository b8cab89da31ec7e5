"""Read every policy document under a path, check it against its kind's schema, and let each family
compile all of its documents at once.

What refuses the whole set (the previous snapshot keeps serving): an unreadable file or a YAML syntax
error, a document that is no mapping or has no apiVersion/kind, an unknown kind, a schema violation
of a kind that has a schema, two policies with the same full identity, and any set-level error a
family reports (the platform batteries report their compile errors so). A family may instead keep
a broken policy whose identity it knows, with `.error` set: the dispatcher then applies that
policy's failure policy on each request. See docs/architecture.md.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from webhook.cel import CelCompiler
from webhook.model.errors import PolicyLoadError
from webhook.model.exception_trust import HONOUR_NONE, ExceptionTrust
from webhook.model.policy import CompiledPolicy, PolicyId
from webhook.model.quickinit import frozen_dataclass
from webhook.policy.documents import Document, DocumentError, policy_files, read_documents
from webhook.policy.errors import schema_error
from webhook.policy.family import CelEvaluation, CompileEnv, FamilyRegistry, PolicyFamily
from webhook.policy.testfiles import in_test_folder, is_cli_document, named_files

log = logging.getLogger(__name__)


@frozen_dataclass
class LoadResult:
    policies: tuple[CompiledPolicy, ...]  # in load order (file order, then document order)
    errors: tuple[PolicyLoadError, ...]
    files: tuple[str, ...]
    # documents left out as Kyverno CLI test material (policy/testfiles.py): (file, document index)
    skipped: tuple[tuple[str, int], ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def annotations(self) -> Mapping[PolicyId, Mapping[str, str]]:
        """metadata.annotations of each loaded policy (reports read severity, category, events)."""
        return {p.id: p.annotations for p in self.policies}


@dataclass
class _Gathered:
    documents: list[Document] = field(default_factory=list)
    errors: list[PolicyLoadError] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    skipped: list[tuple[str, int]] = field(default_factory=list)


class PolicyLoader:
    def __init__(self, registry: FamilyRegistry, cel: CelCompiler, exceptions: ExceptionTrust = HONOUR_NONE,
                 cel_evaluation: CelEvaluation = CelEvaluation.DEFAULT) -> None:
        self.registry = registry
        self.env = CompileEnv(cel=cel, exceptions=exceptions, cel_evaluation=cel_evaluation)

    def load(self, root: Path, extra: Sequence[Document] = ()) -> LoadResult:
        """`extra`: documents from elsewhere (policy objects of the cluster), loaded after the files."""
        if not root.exists():
            err = PolicyLoadError(str(root), 0, None, "", "policy path does not exist")
            return LoadResult((), (err,), ())
        gathered = self._read(root)
        gathered.documents.extend(extra)
        policies, errors = self.compile_documents(gathered.documents)
        return LoadResult(policies, tuple(gathered.errors) + errors, tuple(gathered.files), tuple(gathered.skipped))

    def compile_documents(self, documents: Sequence[Document]) -> tuple[tuple[CompiledPolicy, ...], tuple[PolicyLoadError, ...]]:
        """Check and compile documents already read (the `test` runner reads a suite's files itself)."""
        by_family: dict[str, list[Document]] = {f.name: [] for f in self.registry.families}
        errors: list[PolicyLoadError] = []
        for doc in documents:
            problem = self.check_document(doc)
            if problem is not None:
                errors.append(problem)
            else:
                family = self.registry.owner(doc.data["apiVersion"], doc.data["kind"])
                by_family[family.name].append(doc)  # type: ignore[union-attr]
        policies: list[CompiledPolicy] = []
        for family in self.registry.families:
            if by_family[family.name]:
                compiled, family_errors = self._compile(family, by_family[family.name])
                policies.extend(compiled)
                errors.extend(family_errors)
        order = {(d.file, d.index): n for n, d in enumerate(documents)}
        policies.sort(key=lambda p: order.get((p.source.file, p.source.document), len(order)))
        errors.extend(_duplicates(policies))
        return tuple(policies), tuple(errors)

    def _read(self, root: Path) -> _Gathered:
        out = _Gathered()
        base = root if root.is_dir() else root.parent
        read: list[tuple[Path, list[Document]]] = []
        for path in policy_files(root):
            out.files.append(str(path))
            display = str(path.relative_to(base)) if path != root else path.name
            try:
                read.append((path, list(read_documents(path, display))))
            except DocumentError as exc:
                out.errors.append(PolicyLoadError(exc.file, exc.index, exc.line, "", exc.message))
            except (OSError, UnicodeDecodeError) as exc:
                out.errors.append(PolicyLoadError(display, 0, None, "", f"cannot read: {exc}"))
        # Kyverno CLI test suites beside the policies: the tests, and what they name or keep in .kyverno-test/
        # unless it is a policy (a test names its policies too, and those load as policies)
        test_material = {named for path, documents in read for doc in documents if is_cli_document(doc.data)
                         for named in named_files(doc.data, path)}
        for path, documents in read:
            aside = in_test_folder(path) or path.resolve() in test_material
            for doc in documents:
                if is_cli_document(doc.data) or (aside and not self._is_policy(doc.data)):
                    out.skipped.append((doc.file, doc.index))
                else:
                    out.documents.append(doc)
        return out

    def _is_policy(self, data: Any) -> bool:
        api_version, kind = (data.get("apiVersion"), data.get("kind")) if isinstance(data, dict) else (None, None)
        return isinstance(api_version, str) and isinstance(kind, str) and self.registry.owner(api_version, kind) is not None

    def check_document(self, doc: Document) -> PolicyLoadError | None:
        """The envelope and, when the kind has one, the schema; None when a family may compile it."""
        data: Any = doc.data
        if not isinstance(data, dict):
            return PolicyLoadError(doc.file, doc.index, doc.line_of([]), "", "a policy document must be a mapping")
        api_version, kind = data.get("apiVersion"), data.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            return PolicyLoadError(doc.file, doc.index, doc.line_of([]), "apiVersion" if not isinstance(api_version, str) else "kind",
                                   "apiVersion and kind must be strings")
        if self.registry.owner(api_version, kind) is None:
            return PolicyLoadError(doc.file, doc.index, doc.line_of(["kind"]), "kind", self.registry.unknown(api_version, kind))
        validator = self.registry.validator(api_version, kind)
        if validator is None or validator.is_valid(data):
            return None
        from jsonschema.exceptions import best_match  # only to explain a violation: slow to import

        error = best_match(validator.validator.iter_errors(data))
        return schema_error(doc, error) if error is not None else None

    def _compile(self, family: PolicyFamily, documents: Sequence[Document]) -> tuple[Sequence[CompiledPolicy], Sequence[PolicyLoadError]]:
        try:
            result = family.compile(documents, self.env)
        except Exception as exc:  # a family bug must not take the server down: refuse the set, say where
            log.exception("policy family %s failed to compile", family.name)
            first = documents[0]
            return (), (PolicyLoadError(first.file, first.index, None, "",
                                        f"the {family.name} policy family failed: {type(exc).__name__}: {exc}"),)
        return result.policies, result.errors


def _duplicates(policies: Sequence[CompiledPolicy]) -> list[PolicyLoadError]:
    seen: dict[PolicyId, CompiledPolicy] = {}
    errors = []
    for policy in policies:
        if policy.id in seen:
            first = seen[policy.id]
            name = f"{policy.id.namespace}/{policy.id.name}" if policy.id.namespace else policy.id.name
            errors.append(PolicyLoadError(policy.source.file, policy.source.document, None, "metadata.name",
                                          f"{policy.id.kind} {name!r} is already defined in {first.source}"))
        else:
            seen[policy.id] = policy
    return errors
