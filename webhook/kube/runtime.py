"""Live mode wired together: the API client, informers, report writer, Lease and background work.

The composition root builds it before the engine (the engine reads its ClusterState and writes to
its report sink), attaches the policy store, and starts/stops it with the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import replace
from typing import Any, Callable

from webhook.kube.background import BackgroundWork
from webhook.kube.backstop import LimitsSource, QuotaBackstop
from webhook.kube.calls import BlockingCalls
from webhook.kube.client import KubeApi
from webhook.kube.lease import LeaderElector
from webhook.kube.policy_objects import PolicyObjectFeed
from webhook.kube.report_writer import PolicyReportWriter, Resolution
from webhook.kube.reservations import ApiReservations
from webhook.kube.resources import watched
from webhook.kube.settings import LiveSettings
from webhook.kube.state import LiveClusterState
from webhook.model.results import PolicyId
from webhook.observability.metrics import Metrics
from webhook.policy.snapshot import PolicyStore
from webhook.reports.policyreport import PolicyMeta
from webhook.reports.sink import ResourceRef

log = logging.getLogger(__name__)

_NO_META = PolicyMeta()  # a policy without report annotations


def resolver(state: LiveClusterState):
    """A report can be written once its resource shows in the informer: its uid makes the report owned by it."""
    def resolve(ref: ResourceRef) -> tuple[Resolution, ResourceRef]:
        resource = watched(ref.kind)
        if resource is None or resource.api_version != ref.api_version:
            # a kind we do not watch: the validate phase knows its uid; without one it cannot be owned
            return (Resolution.READY, ref) if ref.uid else (Resolution.DROP, ref)
        current = state.get(ref.kind, ref.namespace, ref.name)
        uid = str(((current or {}).get("metadata") or {}).get("uid", ""))
        if current is None or (ref.uid and uid != ref.uid):
            return Resolution.WAIT, ref
        return Resolution.READY, replace(ref, uid=uid)
    return resolve


class LiveRuntime:
    def __init__(self, settings: LiveSettings, metrics: Metrics, api: KubeApi | None = None,
                 known_policy_kind: Callable[[str, str], bool] | None = None) -> None:
        self.settings = settings
        self.api = api or KubeApi.connect(settings.kubeconfig, settings.in_cluster)
        self.calls = BlockingCalls()
        self.state = LiveClusterState(self.api, settings, self.calls)
        # what the quota's reservations share with the other replicas (the composition root hands it to the ledgers)
        self.reservations = ApiReservations(self.api, self.calls, self.state, settings)
        # policy objects (ProfileQuota, ClusterPolicy...) of the kinds the engine knows; none when it knows none
        self.policy_objects = PolicyObjectFeed(self.api, settings, known_policy_kind or (lambda _v, _k: False))
        self.store: PolicyStore | None = None
        self._metas: tuple[int, dict[PolicyId, PolicyMeta]] = (-1, {})
        self.writer = PolicyReportWriter(self.api, self.calls, settings, metrics, self.policy_meta, self.known_policies,
                                         resolver(self.state))
        self.elector = LeaderElector(self.api, self.calls, settings)
        self.background: BackgroundWork | None = None
        self._tasks: list[asyncio.Task[Any]] = []

    def attach(self, store: PolicyStore, limits: LimitsSource | None = None) -> None:
        """`limits`: the quota policies' per-profile limits for the ResourceQuota backstop (None: no backstop)."""
        self.store = store
        backstop = QuotaBackstop(self.api, self.calls, self.state, limits, self.settings) \
            if self.settings.backstop and limits is not None else None
        self.background = BackgroundWork(self.writer.background_sink(), self.state, store, self.elector, backstop,
                                         self.settings)
        self.state.add_listener(self.background.notify)

    # --- what reports need of the policies -------------------------------------------------------
    def policy_meta(self, policy: PolicyId) -> PolicyMeta:
        if self.store is None:
            return PolicyMeta()
        snapshot = self.store.snapshot
        generation, metas = self._metas
        if generation != snapshot.generation:
            metas = {pid: PolicyMeta.of(annotations) for pid, annotations in snapshot.annotations.items()}
            self._metas = (snapshot.generation, metas)
        return metas.get(policy, _NO_META)

    def known_policies(self) -> frozenset[str]:
        """As PolicyReport results name them (webhook.reports.policyreport.result_entry)."""
        return frozenset(p.id.qualified_name for p in self.store.snapshot.policies) if self.store else frozenset()

    # --- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        self.state.start()  # informer threads; /readyz says unready until they synced
        self.policy_objects.start()  # the policy source picks them up at its next poll
        self._tasks = [asyncio.create_task(self.writer.run(), name="policy-reports"),
                       asyncio.create_task(self.elector.run(), name="lease")]
        if self.background is not None:
            self._tasks.append(asyncio.create_task(self.background.run(), name="background"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(Exception):  # what is queued gets one chance to be written
            await asyncio.wait_for(self.writer.flush(), 2.0)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.calls(self.elector.release), 2.0)
        await asyncio.to_thread(self.state.stop)
        await asyncio.to_thread(self.policy_objects.stop, 0.0)
        self.calls.shutdown()
        self.api.close()
