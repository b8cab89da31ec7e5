"""One JSON object per log line, with the admission uid when there is one."""

from __future__ import annotations

import json
import logging
import sys
import time
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import orjson

from webhook.model.results import Outcome

if TYPE_CHECKING:
    from webhook.model.results import RuleResult
    from webhook.model.review import AdmissionRequest
    from webhook.model.verdict import Verdict

_EXTRA_FIELDS = ("uid", "kind", "namespace", "object_name", "operation", "verdict", "policy", "policy_kind", "rule",
                 "result", "mode", "user", "file", "duration_ms", "endpoint", "folded", "event_loop")
_OUTCOME = attrgetter("outcome")
_NOT_PASS = Outcome.PASS.value.__ne__
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
        try:
            return orjson.dumps(entry, default=str).decode()
        except TypeError:  # an integer beyond 64 bits in some field
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


@dataclass
class RepeatWindow:
    """Audit findings repeat: a policy in Audit warns about every pod of a Deployment, and at saturation one
    info line per warning cost more than the policies did. The first warning of a (policy, rule, namespace)
    in each `seconds` is logged; the next logged one says how many it stands for. Denials and errors are
    never folded. The PolicyReports keep every finding whatever the log shows."""

    seconds: float = 60.0
    max_keys: int = 4096  # beyond this many distinct findings in a window, start the windows afresh
    _seen: dict[tuple[Any, ...], list[float]] = field(default_factory=dict)  # key -> [window start, folded]

    def take(self, key: tuple[Any, ...], now: float) -> int | None:
        """None: fold this one into the window; else log it, saying it stands for that many folded before."""
        entry = self._seen.get(key)
        if entry is not None and now - entry[0] < self.seconds:
            entry[1] += 1
            return None
        if entry is None and len(self._seen) >= self.max_keys:
            self._seen.clear()
        self._seen[key] = [now, 0]
        return int(entry[1]) if entry is not None else 0


def log_admission(log: logging.Logger, endpoint: str, request: "AdmissionRequest", verdict: "Verdict",
                  seconds: float, repeats: RepeatWindow | None = None) -> None:
    """Info: one line per rule that denied, errored or (folded by `repeats`) warned: policy, rule, short
    message, user. Debug: also one line per admission and one per rule result, whatever it was, unfolded."""
    debug = log.isEnabledFor(logging.DEBUG)
    lines = [(r, 0) for r in verdict.results] if debug else _flagged(verdict.results, request.namespace, repeats)
    if not lines and not debug:
        return  # the common case: nothing to say at info
    outcome = "allowed" if verdict.allowed else "denied"
    where = f"{request.namespace}/{request.object_name}" if request.namespace else request.object_name
    base = {"uid": request.uid, "kind": request.kind.kind, "namespace": request.namespace,
            "object_name": request.object_name, "operation": request.operation, "endpoint": endpoint,
            "verdict": outcome, "user": request.user.username}
    if debug:
        log.debug("%s %s", endpoint, outcome, extra={**base, "duration_ms": round(seconds * 1000, 2)})
    for result, folded in lines:
        flagged = result.blocks or result.reported
        effect = "denied" if result.blocks else ("warned" if flagged else result.outcome.value)
        fields = {**base, "policy": result.policy.qualified_name, "policy_kind": result.policy.kind, "rule": result.rule,
                  "result": result.outcome.value, "mode": result.action.value}
        more = ""
        if folded:
            fields["folded"] = folded
            more = f" (and {folded} more like it in {repeats.seconds:g}s, not logged)"  # type: ignore[union-attr]
        log.log(logging.INFO if flagged else logging.DEBUG, "%s %s %s %s by %s: %s/%s: %s%s", endpoint, effect,
                request.kind.kind, where, request.user.username or "(unknown user)", result.policy.qualified_name, result.rule,
                _short(result.message) or result.outcome.value, more, extra=fields)


def _flagged(results: "tuple[RuleResult, ...]", namespace: str, repeats: RepeatWindow | None) -> list[tuple["RuleResult", int]]:
    """The results worth a line at info, each with how many folded lines it stands for."""
    lines: list[tuple[RuleResult, int]] = []
    now = 0.0
    # a pass never makes a line (it neither blocks nor is reported, nor is it an error), and most results pass:
    # they are passed over in C (str's !=, as Outcome is a str), the rest looked at one by one
    for result in compress(results, map(_NOT_PASS, map(_OUTCOME, results))):
        if result.blocks or result.outcome is Outcome.ERROR:
            lines.append((result, 0))
        elif result.reported:
            if repeats is None:
                lines.append((result, 0))
                continue
            now = now or time.monotonic()
            folded = repeats.take((result.policy, result.rule, namespace), now)
            if folded is not None:
                lines.append((result, folded))
    return lines
