"""The two error channels: a malformed request (HTTP 400) and a policy that cannot be loaded."""

from __future__ import annotations

from webhook.model.quickinit import frozen_dataclass


class MalformedReview(ValueError):
    """The body is not an AdmissionReview we can answer; the server replies 400 with this reason."""


@frozen_dataclass
class PolicyLoadError:
    """Why one policy document was refused, precise enough to fix it without reading our code."""

    file: str
    document: int  # 0-based index of the YAML document inside the file
    line: int | None  # 1-based line of the offending field, when known
    field: str  # dotted path, e.g. "spec.limits[0].gpus"; "" for the whole document
    message: str  # what was expected

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        field = f" field {self.field}" if self.field else ""
        return f"{where}: document {self.document}{field}: {self.message}"


class PolicyCompileError(Exception):
    """Raised by a policy compiler for a value the schema cannot catch (a bad CEL expression, a bad quantity)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
