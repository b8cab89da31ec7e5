"""The API server appends ?timeout=<Go duration> to webhook calls; we must answer before it runs out."""

from __future__ import annotations

import re

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
MAX_TIMEOUT = 30.0  # the API server's cap on a webhook's timeoutSeconds


def parse_go_duration(text: str) -> float | None:
    text = text.strip()
    if not text:
        return None
    pos, total = 0, 0.0
    for match in _PART.finditer(text):
        if match.start() != pos:
            return None
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    return total if pos == len(text) and total > 0 else None


def evaluation_budget(query_timeout: str | None, default: float) -> float:
    """Leave a margin for encoding and the network: a fifth of the timeout, and at least a second of it when it
    is longer than that."""
    timeout = parse_go_duration(query_timeout) if query_timeout else None
    if timeout is None:
        return default
    timeout = min(timeout, MAX_TIMEOUT)
    return max(0.05, min(timeout * 0.8, timeout - 1.0) if timeout > 1.0 else timeout * 0.8)
