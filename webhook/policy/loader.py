"""Read every policy document under a path, validate it against its kind's schema, compile it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from jsonschema.exceptions import ValidationError, best_match

from webhook.cel import CelCompiler
from webhook.model.errors import PolicyCompileError, PolicyLoadError
from webhook.model.policy import CompiledPolicy, SourceRef
from webhook.policy.documents import Document, DocumentError, policy_files, read_documents
from webhook.policy.kinds import KindRegistry


@dataclass(frozen=True)
class LoadResult:
    policies: tuple[CompiledPolicy, ...]
    errors: tuple[PolicyLoadError, ...]
    files: tuple[str, ...]
    # metadata.annotations of each loaded policy, by policy name (reports read severity, category, events)
    annotations: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors


def field_path(path: Sequence[str | int]) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out


def _parse_field(text: str) -> list[str | int]:
    """Inverse of field_path, to find the line of a compiler's field."""
    steps: list[str | int] = []
    for part in text.replace("]", "").split("."):
        head, *indexes = part.split("[")
        if head:
            steps.append(head)
        steps.extend(int(i) for i in indexes if i.isdigit())
    return steps


def _schema_error(doc: Document, error: ValidationError) -> PolicyLoadError:
    path = list(error.absolute_path)
    message = error.message
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = error.schema.get("properties", {})
        unexpected = sorted(k for k in error.instance if k not in allowed)
        if unexpected:
            path = path + [unexpected[0]]
        message = f"unknown field {', '.join(map(repr, unexpected))}; allowed fields: {', '.join(sorted(allowed))}"
    elif error.validator == "required":
        missing = message.split("'")[1] if "'" in message else message
        path = path + [missing]
        message = f"required field {missing!r} is missing"
    return PolicyLoadError(doc.file, doc.index, doc.line_of(path), field_path(path), message)


class PolicyLoader:
    def __init__(self, registry: KindRegistry, cel: CelCompiler) -> None:
        self.registry = registry
        self.cel = cel

    def load(self, root: Path) -> LoadResult:
        if not root.exists():
            err = PolicyLoadError(str(root), 0, None, "", "policy path does not exist")
            return LoadResult((), (err,), ())
        files = policy_files(root)
        policies: list[CompiledPolicy] = []
        errors: list[PolicyLoadError] = []
        annotations: dict[str, Mapping[str, str]] = {}
        base = root if root.is_dir() else root.parent
        for path in files:
            display = str(path.relative_to(base)) if path != root else path.name
            try:
                documents = list(read_documents(path, display))
            except DocumentError as exc:
                errors.append(PolicyLoadError(exc.file, exc.index, exc.line, "", exc.message))
                continue
            except (OSError, UnicodeDecodeError) as exc:
                errors.append(PolicyLoadError(display, 0, None, "", f"cannot read: {exc}"))
                continue
            for doc in documents:
                compiled = self.compile_document(doc)
                if isinstance(compiled, PolicyLoadError):
                    errors.append(compiled)
                else:
                    policies.append(compiled)
                    annotations[compiled.name] = dict((doc.data.get("metadata") or {}).get("annotations") or {})
        errors.extend(self._duplicates(policies))
        return LoadResult(tuple(policies), tuple(errors), tuple(str(f) for f in files), annotations)

    def compile_document(self, doc: Document) -> CompiledPolicy | PolicyLoadError:
        data: Any = doc.data
        if not isinstance(data, dict):
            return PolicyLoadError(doc.file, doc.index, doc.line_of([]), "", "a policy document must be a mapping")
        api_version, kind = data.get("apiVersion"), data.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            return PolicyLoadError(doc.file, doc.index, doc.line_of([]), "apiVersion" if not isinstance(api_version, str) else "kind",
                                   "apiVersion and kind must be strings")
        policy_kind = self.registry.lookup(api_version, kind)
        if policy_kind is None:
            return PolicyLoadError(doc.file, doc.index, doc.line_of(["kind"]), "kind",
                                   f"unknown policy kind {api_version} {kind}; known kinds: {', '.join(self.registry.known())}")
        error = best_match(self.registry.validator(policy_kind).iter_errors(data))
        if error is not None:
            return _schema_error(doc, error)
        try:
            return policy_kind.compile(data, SourceRef(doc.file, doc.index), self.cel)
        except PolicyCompileError as exc:
            return PolicyLoadError(doc.file, doc.index, doc.line_of(_parse_field(exc.field)), exc.field, exc.message)

    @staticmethod
    def _duplicates(policies: Sequence[CompiledPolicy]) -> list[PolicyLoadError]:
        seen: dict[tuple[str, str], CompiledPolicy] = {}
        errors = []
        for policy in policies:
            key = (policy.kind, policy.name)
            if key in seen:
                first = seen[key]
                errors.append(PolicyLoadError(policy.source.file, policy.source.document, None, "metadata.name",
                                              f"{policy.kind} {policy.name!r} is already defined in {first.source}"))
            else:
                seen[key] = policy
        return errors
