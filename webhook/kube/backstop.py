"""The ResourceQuota backstop: one ResourceQuota per profile, kept equal to its quota limits.

Why: the webhook's own check serializes creates per profile inside one replica; two replicas, or
a cache a moment behind, can still let two creates through where one fits. The API server's
ResourceQuota admission runs after every validating webhook and charges usage atomically, so the
hard limit holds whatever happened before it. Only the Lease holder reconciles.
"""

from __future__ import annotations

import logging
from fractions import Fraction
from typing import Any, Mapping, Protocol

from kubernetes.client.exceptions import ApiException

from webhook.kube.calls import BlockingCalls
from webhook.kube.client import ApiStatus, KubeApi
from webhook.kube.resources import RESOURCE_QUOTAS
from webhook.kube.settings import LiveSettings
from webhook.model.cluster import NAMESPACE, ClusterState
from webhook.model.quantity import parse_quantity
from webhook.model.quickinit import frozen_dataclass

log = logging.getLogger(__name__)

ROLE_LABEL = "quartermaster.dev/role"
LABELS = {"app.kubernetes.io/managed-by": "quartermaster", ROLE_LABEL: "profile-quota"}
SELECTOR = ",".join(f"{k}={v}" for k, v in LABELS.items())
NOTE = ("Backstop for Quartermaster's ProfileQuota policy, enforced by the API server after the webhook. "
        "Managed by Quartermaster: edits are overwritten; change the policy instead.")
_BINARY = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))



class LimitsSource(Protocol):
    """Each profile's hard limits, from the quota policies (the composition root hands in the quota battery's)."""

    def hard_limits(self, namespace: Mapping[str, Any]) -> dict[str, Fraction] | None:
        """ResourceQuota `spec.hard` for a namespace (amounts), or None when it is no limited profile."""


def quantity_text(amount: Fraction) -> str:
    """Whole numbers; byte counts in the largest binary unit that keeps them whole (as users write them)."""
    whole = int(amount)
    for suffix, unit in _BINARY:
        if whole >= unit and whole % unit == 0:
            return f"{whole // unit}{suffix}"
    return str(whole)


def quota_object(namespace: str, name: str, hard: Mapping[str, Fraction]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(LABELS),
                         "annotations": {"quartermaster.dev/note": NOTE}},
            "spec": {"hard": {key: quantity_text(hard[key]) for key in sorted(hard)}}}


def same_hard(current: Mapping[str, Any], desired: Mapping[str, Fraction]) -> bool:
    """Compared as amounts: the API server rewrites quantities in canonical form ("32212254720" -> "30Gi")."""
    if set(current) != set(desired):
        return False
    try:
        return all(parse_quantity(current[key]) == desired[key] for key in desired)
    except ValueError:
        return False


@frozen_dataclass
class BackstopResult:
    created: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    failed: int = 0


class QuotaBackstop:
    def __init__(self, api: KubeApi, calls: BlockingCalls, state: ClusterState, limits: LimitsSource,
                 settings: LiveSettings) -> None:
        self.api = api
        self.calls = calls
        self.state = state
        self.limits = limits
        self.settings = settings

    def desired(self) -> dict[str, dict[str, Fraction]]:
        wanted = {}
        for namespace in self.state.list(NAMESPACE):
            if (namespace.get("status") or {}).get("phase") == "Terminating":
                continue  # creating anything there fails; its quota goes with it
            hard = self.limits.hard_limits(namespace)
            if hard:
                wanted[str(namespace["metadata"]["name"])] = hard
        return wanted

    async def reconcile(self) -> BackstopResult:
        return await self.calls(self.reconcile_blocking, self.desired())

    def reconcile_blocking(self, desired: Mapping[str, Mapping[str, Fraction]]) -> BackstopResult:
        settings = self.settings
        listed = self.api.list(RESOURCE_QUOTAS, settings.api_timeout, label_selector=SELECTOR)
        existing = {q["metadata"]["namespace"]: q for q in listed.items if q["metadata"]["name"] == settings.backstop_name}
        counts = {"created": 0, "updated": 0, "deleted": 0, "unchanged": 0, "failed": 0}
        for namespace, hard in sorted(desired.items()):
            try:
                counts[self._apply(namespace, hard, existing.get(namespace))] += 1
            except Exception as exc:
                counts["failed"] += 1
                log.warning("ResourceQuota %s/%s not reconciled: %s", namespace, settings.backstop_name,
                            ApiStatus.of(exc) if isinstance(exc, ApiException) else exc)
        for namespace in sorted(set(existing) - set(desired)):
            try:
                self.api.delete(RESOURCE_QUOTAS, namespace, settings.backstop_name, settings.api_timeout)
                counts["deleted"] += 1
                log.info("ResourceQuota %s/%s deleted: no quota policy limits that namespace any more", namespace,
                         settings.backstop_name)
            except Exception as exc:
                counts["failed"] += 1
                log.warning("ResourceQuota %s/%s not deleted: %s", namespace, settings.backstop_name, exc)
        return BackstopResult(**counts)

    def _apply(self, namespace: str, hard: Mapping[str, Fraction], current: Mapping[str, Any] | None) -> str:
        settings = self.settings
        body = quota_object(namespace, settings.backstop_name, hard)
        if current is None:
            try:
                self.api.create(RESOURCE_QUOTAS, body, settings.api_timeout)
                log.info("ResourceQuota %s/%s created: %s", namespace, settings.backstop_name, body["spec"]["hard"])
                return "created"
            except ApiException as exc:
                if ApiStatus.of(exc).reason != "AlreadyExists":
                    raise
                current = self.api.get(RESOURCE_QUOTAS, namespace, settings.backstop_name, settings.api_timeout)
                if current is None:
                    raise
        if same_hard((current.get("spec") or {}).get("hard") or {}, hard) and \
                all((current["metadata"].get("labels") or {}).get(k) == v for k, v in LABELS.items()):
            return "unchanged"
        body["metadata"]["resourceVersion"] = current["metadata"].get("resourceVersion")
        self.api.replace(RESOURCE_QUOTAS, body, settings.api_timeout)  # a 409 is retried at the next round
        log.info("ResourceQuota %s/%s updated: %s", namespace, settings.backstop_name, body["spec"]["hard"])
        return "updated"
