"""Background work of the Lease holder: scans and the ResourceQuota backstop.

A scan runs when the policy snapshot changes and every `scan_interval` seconds; the backstop is
reconciled when policies change, when a Namespace or Profile changes (an informer says so), and
every `backstop_interval` seconds. Neither runs before the informers synced, nor on a replica
that does not hold the Lease.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Callable, Mapping

from webhook.kube.backstop import BackstopResult, QuotaBackstop
from webhook.kube.lease import LeaderElector
from webhook.engine.scan import ScanSummary, scan
from webhook.kube.settings import LiveSettings
from webhook.model.cluster import NAMESPACE, PROFILE, ClusterState
from webhook.policy.snapshot import PolicyStore
from webhook.reports.sink import ResultSink

log = logging.getLogger(__name__)

BACKSTOP_KINDS = frozenset({NAMESPACE, PROFILE})


class BackgroundWork:
    def __init__(self, sink: ResultSink, state: ClusterState, store: PolicyStore, elector: LeaderElector,
                 backstop: QuotaBackstop | None, settings: LiveSettings, clock: Callable[[], float] = time.monotonic) -> None:
        self.sink = sink
        self.state = state
        self.store = store
        self.elector = elector
        self.backstop = backstop
        self.settings = settings
        self.clock = clock
        self.scans: list[ScanSummary] = []
        self.backstops: list[BackstopResult] = []
        self._scanned: tuple[int, float] | None = None  # (generation, when)
        self._reconciled: tuple[int, float] | None = None
        self._dirty = True
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake = asyncio.Event()

    def notify(self, kind: str, event: str, obj: Mapping[str, Any] | None) -> None:
        """From informer threads: a Namespace or Profile changed, the backstop may be out of date."""
        if kind in BACKSTOP_KINDS:
            self._dirty = True
            if self._loop is not None:
                self._loop.call_soon_threadsafe(self._wake.set)

    async def run(self) -> None:
        self._loop = asyncio.get_running_loop()
        tick = max(0.05, min(1.0, self.settings.lease_retry_seconds))
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), tick)
            except asyncio.TimeoutError:
                pass
            self._wake.clear()
            if not (self.state.synced and self.store.status.loaded and self.elector.is_leader):
                continue
            try:
                await self.step()
            except Exception:  # keep going: the next tick tries again
                log.exception("background work failed")

    async def step(self) -> None:
        generation, now = self.store.snapshot.generation, self.clock()
        if self._due(self._scanned, generation, self.settings.scan_interval):
            self._scanned = (generation, now)
            summary = await scan(self.store, self.state, self.sink)
            self.scans.append(summary)
            log.info("background scan (policy generation %d): %d resources, %d results, %d failing", generation,
                     summary.resources, summary.results, summary.failures)
        if self.backstop is not None and (self._dirty or self._due(self._reconciled, generation,
                                                                   self.settings.backstop_interval)):
            self._dirty = False
            self._reconciled = (generation, now)
            self.backstops.append(await self.backstop.reconcile())
            del self.backstops[:-20]

    def _due(self, last: tuple[int, float] | None, generation: int, interval: float) -> bool:
        if last is None or last[0] != generation:
            return True
        return interval > 0 and self.clock() - last[1] >= interval
