"""One JSON object per log line, with the admission uid when there is one."""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from webhook.model.review import AdmissionRequest
    from webhook.model.verdict import Verdict

_EXTRA_FIELDS = ("uid", "kind", "namespace", "object_name", "operation", "verdict", "policy", "policy_kind", "rule",
                 "result", "mode", "user", "file", "duration_ms", "endpoint")
SHORT_MESSAGE = 200  # a log line names the problem; the PolicyReport keeps the whole message


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key in _EXTRA_FIELDS:
            if hasattr(record, key):
                entry[key] = getattr(record, key)
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging(level: str = "info") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SHORT_MESSAGE else text[: SHORT_MESSAGE - 3].rstrip() + "..."


def log_admission(log: logging.Logger, endpoint: str, request: "AdmissionRequest", verdict: "Verdict",
                  seconds: float) -> None:
    """Info: one line per rule that denied or warned (policy, rule, short message, user). Debug: also one
    line per admission and one per rule result, whatever it was."""
    outcome = "allowed" if verdict.allowed else "denied"
    where = f"{request.namespace}/{request.object_name}" if request.namespace else request.object_name
    base = {"uid": request.uid, "kind": request.kind.kind, "namespace": request.namespace,
            "object_name": request.object_name, "operation": request.operation, "endpoint": endpoint,
            "verdict": outcome, "user": request.user.username}
    debug = log.isEnabledFor(logging.DEBUG)
    if debug:
        log.debug("%s %s", endpoint, outcome, extra={**base, "duration_ms": round(seconds * 1000, 2)})
    for result in verdict.results:
        flagged = result.blocks or result.reported
        if not (flagged or debug):
            continue
        effect = "denied" if result.blocks else ("warned" if flagged else result.outcome.value)
        fields = {**base, "policy": result.policy.qualified_name, "policy_kind": result.policy.kind, "rule": result.rule,
                  "result": result.outcome.value,
                  "mode": result.action.value}
        log.log(logging.INFO if flagged else logging.DEBUG, "%s %s %s %s by %s: %s/%s: %s", endpoint, effect,
                request.kind.kind, where, request.user.username or "(unknown user)", result.policy.qualified_name, result.rule,
                _short(result.message) or result.outcome.value, extra=fields)
