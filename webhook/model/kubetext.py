"""Text as the API server and kubectl take it: warnings (one short line) and audit annotation keys (a label name)."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
WARNING_LIMIT = 120  # kube-apiserver's advice: shorter warnings render well in kubectl


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
