"""What evaluating one Kyverno rule produced, and what the evaluation may read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

PASS, FAIL, SKIP, ERROR, WARN = "pass", "fail", "skip", "error", "warn"


@dataclass(frozen=True)
class Outcome:
    status: str
    message: str = ""


@dataclass(frozen=True)
class RuleEnv:
    """Per-request evaluation inputs shared by all rules of a policy."""

    lookups: Any = None                     # webhook.model.lookups.Lookups (duck-typed: get/list/http/...)
    overrides: Mapping[str, Any] = field(default_factory=dict)   # test-supplied values by name/dotted path
    cel: Any = None                         # CelCompiler for validate.cel rules
    namespace_object: Mapping[str, Any] | None = None
