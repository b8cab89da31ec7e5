"""The engine's answer to one admission request, before it is put on the wire."""

from __future__ import annotations

import re
from dataclasses import field
from typing import Any, Mapping

from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import RuleResult

_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
WARNING_LIMIT = 120  # kube-apiserver's advice: shorter warnings render well in kubectl


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


def clean_warning(text: str) -> str:
    """kubectl prints warnings raw: no control characters, and short enough to read on one line."""
    text = _CONTROL.sub(" ", text).strip()
    if len(text) > WARNING_LIMIT:
        text = text[: WARNING_LIMIT - 3].rstrip() + "..."
    return text


def annotation_key(policy: str, rule: str) -> str:
    """Audit annotation keys get the webhook name prepended by the API server, so they must be a bare label name."""
    key = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{policy}.{rule}").strip("-._")
    return key[:63].rstrip("-._") or "policy"


def deny(message: str, results: tuple[RuleResult, ...] = (), code: int = 403) -> Verdict:
    return Verdict(allowed=False, code=code, message=message, reason="Forbidden" if code == 403 else "", results=results)
