"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it.

Only the holder runs background work (scans, the ResourceQuota backstop). Expiry is judged on the
local clock from when this replica last saw the lease record change, never on the timestamps in
it, so clock skew between nodes cannot make two replicas leaders at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import datetime, timezone
from typing import Any, Callable

from kubernetes.client.exceptions import ApiException

from webhook.kube.calls import BlockingCalls
from webhook.kube.client import ApiStatus, KubeApi
from webhook.kube.resources import LEASES
from webhook.kube.settings import LiveSettings

log = logging.getLogger(__name__)


def micro_time(now: datetime | None = None) -> str:
    return (now or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(self, api: KubeApi, calls: BlockingCalls, settings: LiveSettings,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.api = api
        self.calls = calls
        self.settings = settings
        self.clock = clock
        self.identity = settings.who
        self._renewed_at: float | None = None
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self.transitions = 0  # times this replica became the leader

    @property
    def is_leader(self) -> bool:
        """Held, and renewed recently enough that no other replica can have taken over."""
        return self._renewed_at is not None and self.clock() - self._renewed_at < self.settings.lease_seconds

    async def run(self) -> None:
        while True:
            try:
                leader = await self.calls(self.try_acquire_or_renew)
            except Exception as exc:
                leader = False
                log.warning("lease %s: %s", self.settings.lease_name,
                            ApiStatus.of(exc) if isinstance(exc, ApiException) else exc)
            await asyncio.sleep(self.settings.lease_renew_seconds if leader else self.settings.lease_retry_seconds)

    def _spec(self, transitions: int, acquired: str | None = None) -> dict[str, Any]:
        now = micro_time()
        return {"holderIdentity": self.identity, "leaseDurationSeconds": max(1, int(round(self.settings.lease_seconds))),
                "acquireTime": acquired or now, "renewTime": now, "leaseTransitions": transitions}

    def try_acquire_or_renew(self) -> bool:
        """Blocking: one round of the election. True when this replica holds the lease now."""
        settings = self.settings
        lease = self.api.get(LEASES, settings.namespace, settings.lease_name, settings.api_timeout)
        if lease is None:
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": settings.lease_name, "namespace": settings.namespace},
                    "spec": self._spec(0)}
            return self._write(self.api.create, body, became=True)
        spec = dict(lease.get("spec") or {})
        holder = spec.get("holderIdentity") or ""
        if holder == self.identity:
            lease["spec"] = self._spec(int(spec.get("leaseTransitions") or 0), spec.get("acquireTime"))
            return self._write(self.api.replace, lease, became=self._renewed_at is None)
        record = (holder, spec.get("renewTime"), (lease.get("metadata") or {}).get("resourceVersion"))
        if record != self._observed:
            self._observed, self._observed_at = record, self.clock()
        self._renewed_at = None
        duration = float(spec.get("leaseDurationSeconds") or settings.lease_seconds)
        if holder and self.clock() - self._observed_at < duration:
            return False  # held by another replica that renewed within its duration
        lease["spec"] = self._spec(int(spec.get("leaseTransitions") or 0) + 1)
        return self._write(self.api.replace, lease, became=True)

    def _write(self, write: Callable[..., Any], body: dict[str, Any], became: bool) -> bool:
        started = self.clock()
        try:
            write(LEASES, body, self.settings.api_timeout)
        except ApiException as exc:
            if exc.status == 409:  # another replica wrote first
                self._renewed_at = None
                return False
            raise
        self._renewed_at = started
        if became:
            self.transitions += 1
            log.info("lease %s: %s is the leader", self.settings.lease_name, self.identity)
        return True

    def release(self) -> None:
        """Blocking: give the lease up on shutdown, so another replica takes over at once."""
        if self._renewed_at is None:
            return
        self._renewed_at = None
        settings = self.settings
        try:
            lease = self.api.get(LEASES, settings.namespace, settings.lease_name, settings.api_timeout)
            if lease and (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                lease["spec"] = {**lease["spec"], "holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": micro_time()}
                self.api.replace(LEASES, lease, settings.api_timeout)
        except Exception as exc:  # best effort: the lease expires anyway
            log.info("lease %s not released: %s", settings.lease_name, exc)
