"""Composition root: build every service once, wire them, start and stop them in order."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from webhook.cel import CelCompiler
from webhook.compiled import describe as compiled_request_path
from webhook.engine import AdmissionEngine
from webhook.kube.settings import LiveSettings
from webhook.model.cluster import ClusterState
from webhook.model.exception_trust import ExceptionTrust
from webhook.model.quickinit import frozen_dataclass
from webhook.observability.tracing import Tracing
from webhook.platform import platform_family
from webhook.platform.quota.backstop import QuotaPolicyLimits
from webhook.policy.cli_values import Values, ValuesLookups
from webhook.policy.family import CelEvaluation, FamilyRegistry, LazyFamily, PolicyFamily
from webhook.policy.loader import LoadResult, PolicyLoader
from webhook.policy.object_check import PolicyObjectCheck
from webhook.policy.snapshot import PolicyStore
from webhook.policy.source import DirectoryPolicySource
from webhook.reports.sink import ResultSink
from webhook.server.limits import ServerLimits
from webhook.state.ledger import ReservationLedgers
from webhook.state.memory import InMemoryClusterState

if TYPE_CHECKING:  # the server side (aiohttp, cryptography, prometheus_client) is imported when serving: `apply` starts faster
    from webhook.certs.generate import CertPaths
    from webhook.kube.runtime import LiveRuntime
    from webhook.observability.metrics import Metrics
    from webhook.server.handlers import Services
    from webhook.server.tls import CertificateReloader

log = logging.getLogger(__name__)


@frozen_dataclass
class Settings:
    policies: Path = Path("policies")
    state: Path | None = None
    cert_dir: Path = Path("certs")
    host: str = "0.0.0.0"
    port: int = 8443
    service: str = "quartermaster"
    namespace: str = field(default_factory=lambda: os.environ.get("POD_NAMESPACE", "quartermaster"))
    policy_poll_seconds: float = 2.0
    cert_poll_seconds: float = 5.0
    live: LiveSettings | None = None  # set: live cluster mode (informers, API writes) instead of standalone
    client_ca: Path | None = None  # set: clients must present a certificate this CA signed
    limits: ServerLimits = field(default_factory=ServerLimits)
    force_audit: bool = False  # every policy takes its audit action (the chart's auditOnly)
    exception_namespaces: tuple[str, ...] = ()  # PolicyExceptions honoured from these ("*": any); none by default
    cel_evaluation: CelEvaluation = CelEvaluation.DEFAULT  # reference: no CEL fast path (--cel-evaluation)
    exception_files: tuple[Path, ...] = ()  # files of PolicyExceptions loaded with the policies (apply --exception)
    values: Values | None = None  # Kyverno CLI values and --set variables (apply -f/--set): offline runs only


class PolicyLoadFailed(Exception):
    def __init__(self, result: LoadResult) -> None:
        super().__init__("\n".join(str(e) for e in result.errors))
        self.result = result


def _cel_family() -> PolicyFamily:
    from webhook.families.cel.family import CelFamily

    return CelFamily()


def _kyverno_family() -> PolicyFamily:
    from webhook.families.kyverno.family import KyvernoFamily

    return KyvernoFamily()


def build_registry(ledgers: ReservationLedgers | None = None) -> FamilyRegistry:
    """Every policy family this process understands. `ledgers`: the quota reservations, one set per process.
    The CEL and Kyverno families are imported when a document of their API groups is first read."""
    return FamilyRegistry([platform_family(ledgers if ledgers is not None else ReservationLedgers()),
                           LazyFamily("cel", ("policies.kyverno.io", "admissionregistration.k8s.io"), _cel_family),
                           LazyFamily("kyverno", ("kyverno.io",), _kyverno_family)])


def _values_namespaces(state: ClusterState, values: Values) -> None:
    """The values' namespaces (Namespace objects, namespaceSelector labels) join the state; over a Namespace
    the state holds already, their labels win and the rest of it (annotations: a profile's owner) stays."""
    for namespace in values.namespace_objects():
        meta = dict(namespace.get("metadata") or {})
        held = state.get("Namespace", "", str(meta.get("name", "")))
        if held is not None:
            labels = {**((held.get("metadata") or {}).get("labels") or {}), **(meta.get("labels") or {})}
            namespace = {**held, "metadata": {**(held.get("metadata") or {}), "labels": labels}}
        state.record_admitted(namespace, "CREATE")


@dataclass
class Quartermaster:
    """The wired services of one process (server or offline `apply`)."""

    settings: Settings
    state: ClusterState
    store: PolicyStore
    source: DirectoryPolicySource
    engine: AdmissionEngine
    metrics: "Metrics | None"  # None in the one-shot commands (apply, report, validate): they serve no /metrics
    tracing: Tracing
    sink: ResultSink | None  # where rule results go: live, the PolicyReport writer; standalone, none (see build)
    ledgers: ReservationLedgers
    live: "LiveRuntime | None" = None

    @classmethod
    def build(cls, settings: Settings, state: ClusterState | None = None, registry: FamilyRegistry | None = None,
              ledgers: ReservationLedgers | None = None, with_metrics: bool = True,
              sink: ResultSink | None = None) -> "Quartermaster":
        """`registry` and `ledgers` for tests: a registry built with other families must share `ledgers`.
        `sink`: where a standalone process sends rule results (tests pass a MemoryResultSink to read them); by
        default none. Standalone has no PolicyReports to write and nothing there would read a history (users get
        warnings, annotations, logs and metrics; `report` scans the state), while a buffer of the latest results
        cost collector pauses under load: each admission's results outlived young collections before they died,
        so every collection walked them. Live mode sends them to its PolicyReport writer.
        `with_metrics=False` for the one-shot commands: no registry of counters nobody reads, and no import of
        prometheus_client, a noticeable part of their start. Live mode has metrics whatever it says: its
        informers count."""
        metrics = None
        if with_metrics or settings.live is not None:
            from webhook.observability.metrics import Metrics

            metrics = Metrics()
        store = PolicyStore()
        ledgers = ledgers if ledgers is not None else ReservationLedgers()
        registry = registry if registry is not None else build_registry(ledgers)
        loader = PolicyLoader(registry, CelCompiler(), ExceptionTrust(frozenset(settings.exception_namespaces)),
                              settings.cel_evaluation)
        live = None
        if settings.live is not None and state is None:
            from webhook.kube.runtime import LiveRuntime  # standalone never loads the kubernetes client

            live = LiveRuntime(settings.live, metrics, known_policy_kind=lambda av, k: registry.owner(av, k) is not None)
            state = live.state
            ledgers.share(live.reservations)  # quota decisions exact across replicas: before any policy compiles
        # live mode: policy objects of the cluster load beside the directory (files win on conflicts)
        source = DirectoryPolicySource(settings.policies, loader, store, metrics,
                                       objects=live.policy_objects if live is not None else None,
                                       exception_files=settings.exception_files)
        state = state if state is not None else InMemoryClusterState.from_directory(settings.state)
        lookups = None
        if settings.values is not None:
            _values_namespaces(state, settings.values)
            lookups = ValuesLookups(state.lookups, settings.values)
        if metrics is not None:  # a namespace gets a series of its own only when the state holds it
            metrics.attach_namespaces(state)
        if live is not None:
            sink = live.writer
        # standalone, a DELETE review is the deletion (the state follows the reviews it answers). Live, the
        # informers are the truth and a review changes no state: a DELETE review, which anyone who reaches the
        # port can post, must not release a reservation (the ledger holds one until the informers show the object
        # or reservationSeconds pass)
        on_deleted = ledgers.release_deleted if settings.live is None else None
        engine = AdmissionEngine(store, state, sink, on_deleted=on_deleted, force_audit=settings.force_audit,
                                 lookups=lookups)
        if live is not None:
            live.attach(store, QuotaPolicyLimits(store, state))
        return cls(settings, state, store, source, engine, metrics, Tracing(), sink, ledgers, live)

    def load_policies(self) -> LoadResult:
        """The first load must succeed: there is no previous snapshot to fall back on."""
        result = self.source.reload()
        if not result.ok:
            raise PolicyLoadFailed(result)
        return result

    def services(self) -> "Services":
        from webhook.server.handlers import Services

        return Services(self.engine, self.store, self.state, self._served_metrics(), self.tracing,
                        PolicyObjectCheck(self.source.loader))

    def _served_metrics(self) -> "Metrics":
        if self.metrics is None:
            raise RuntimeError("built with_metrics=False, as the one-shot commands are: there is no /metrics to serve")
        return self.metrics

    def tls(self) -> tuple["CertificateReloader", "CertPaths"]:
        from webhook.certs.generate import CertPaths, ensure_certificates, service_names
        from webhook.server.tls import CertificateReloader

        paths = CertPaths(self.settings.cert_dir)
        if ensure_certificates(paths.directory, service_names(self.settings.service, self.settings.namespace)):
            log.info("wrote a self-signed CA and serving certificate to %s (trust %s)", paths.directory, paths.ca_cert)
        return CertificateReloader(paths.cert, paths.key, self.settings.client_ca), paths

    async def serve(self, ready: asyncio.Event | None = None, stop: asyncio.Event | None = None) -> None:
        """Serve until `stop` is set or SIGTERM/SIGINT arrives; finish in-flight reviews before exiting."""
        from webhook.server.app import build_app
        from webhook.server.collector import CollectorKeeper
        from webhook.server.eventloop import loop_name
        from webhook.server.listener import Listener

        metrics = self._served_metrics()
        self.load_policies()
        # what was loaded so far (the --state seed, compiled policies, imported modules) lives as long as the
        # process: out of the collector's sight, a full collection no longer walks every stored object (with a
        # large state, those walks were the longest pauses of the tail latency)
        gc.collect()
        gc.freeze()
        reloader, _ = self.tls()
        app = build_app(self.services(), self.settings.limits, client_cert_required=self.settings.client_ca is not None)
        listener = Listener(app, self.settings.host, self.settings.port,
                            reloader.context, self.settings.limits, metrics)
        await listener.start()
        log.info("serving HTTPS on %s:%d", self.settings.host, self.settings.port, extra={"event_loop": loop_name()})
        log.info("%s", compiled_request_path())  # a build without a C compiler answers alike, only slower
        stop = stop or asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        # what arrives later (the informers' first list, admitted objects) is frozen by the keeper
        keeper = CollectorKeeper(synced=lambda: self.state.synced)
        tasks = [asyncio.create_task(self.source.watch(self.settings.policy_poll_seconds), name="policy-watch"),
                 asyncio.create_task(reloader.watch(self.settings.cert_poll_seconds), name="cert-watch"),
                 asyncio.create_task(keeper.watch(), name="collector-keeper")]
        if self.live is not None:
            await self.live.start()
        if ready:
            ready.set()
        try:
            await stop.wait()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await listener.stop()
            if self.live is not None:
                await self.live.stop()
            self.tracing.shutdown()
            metrics.shutdown()
            log.info("stopped")
