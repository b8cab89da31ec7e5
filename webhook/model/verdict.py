"""The engine's answer to one admission request, before it is put on the wire."""

from __future__ import annotations

from dataclasses import field
from typing import Any, Mapping

from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import RuleResult

@frozen_dataclass(dict_init=True)
class Verdict:
    allowed: bool
    code: int = 200
    message: str = ""
    reason: str = ""
    patch: tuple[Mapping[str, Any], ...] = ()
    warnings: tuple[str, ...] = ()
    audit_annotations: Mapping[str, str] = field(default_factory=dict)
    results: tuple[RuleResult, ...] = ()
    # objects the policies generate once the request is admitted (created in the state, never on dryRun)
    generated: tuple[Mapping[str, Any], ...] = ()


def deny(message: str, results: tuple[RuleResult, ...] = (), code: int = 403) -> Verdict:
    return Verdict(allowed=False, code=code, message=message, reason="Forbidden" if code == 403 else "", results=results)
