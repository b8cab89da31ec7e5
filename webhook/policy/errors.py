"""Load errors that name the file, the document, the line and the field."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from webhook.model.errors import PolicyCompileError, PolicyLoadError
from webhook.policy.documents import Document

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError


def field_path(path: Sequence[str | int]) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out


def parse_field(text: str) -> list[str | int]:
    """Inverse of field_path, to find the line of a compiler's field."""
    steps: list[str | int] = []
    for part in text.replace("]", "").split("."):
        head, *indexes = part.split("[")
        if head:
            steps.append(head)
        steps.extend(int(i) for i in indexes if i.isdigit())
    return steps


def document_error(doc: Document, field: str, message: str) -> PolicyLoadError:
    return PolicyLoadError(doc.file, doc.index, doc.line_of(parse_field(field)), field, message)


def compile_error(doc: Document, exc: PolicyCompileError) -> PolicyLoadError:
    return document_error(doc, exc.field, exc.message)


def schema_error(doc: Document, error: ValidationError) -> PolicyLoadError:
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
