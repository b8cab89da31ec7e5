"""Kubernetes Events (events.k8s.io/v1) for rule results, for policies that ask for them."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from webhook.model.results import Outcome, RuleResult
from webhook.reports.sink import ResourceRef

CONTROLLER = "quartermaster.dev/webhook"
NOTE_LIMIT = 1024  # the API server refuses longer notes
_REASONS = {Outcome.FAIL: "PolicyViolation", Outcome.ERROR: "PolicyError", Outcome.WARN: "PolicyWarning",
            Outcome.PASS: "PolicyApplied", Outcome.SKIP: "PolicySkipped"}


def event_name(regarding: str, now: datetime) -> str:
    """`<object>.<nanoseconds in hex>`, as client-go's recorder names events. A generateName ending in "." is
    refused by the API server (a name prefix may end only in "-"), and "-" would make the name ambiguous."""
    return f"{regarding[:200]}.{int(now.timestamp() * 1_000_000_000):x}"


def event_for(resource: ResourceRef, result: RuleResult, instance: str, action: str = "Evaluate",
              now: datetime | None = None) -> dict[str, Any]:
    """An Event on the resource; cluster-scoped resources get theirs in `default`, as Kubernetes does."""
    now = now or datetime.now(timezone.utc)
    warning = result.outcome in (Outcome.FAIL, Outcome.ERROR, Outcome.WARN)
    mode = "" if result.outcome is Outcome.PASS or result.blocks else f" ({result.action.value.lower()})"
    note = f"{result.policy.qualified_name}/{result.rule} {result.outcome.value}{mode}: {result.message}".rstrip(": ")
    regarding = {"apiVersion": resource.api_version, "kind": resource.kind, "name": resource.name}
    if resource.namespace:
        regarding["namespace"] = resource.namespace
    if resource.uid:
        regarding["uid"] = resource.uid
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": event_name(resource.name, now), "namespace": resource.namespace or "default"},
        "eventTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "reportingController": CONTROLLER,
        "reportingInstance": instance[:128],
        "action": action,
        "reason": _REASONS[result.outcome],
        "type": "Warning" if warning else "Normal",
        "note": note[:NOTE_LIMIT],
        "regarding": regarding,
    }
