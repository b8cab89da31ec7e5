"""Policy reports (in the format LiveSettings.report_format names) and Events written off the request path.

`submit` runs inside an admission: it merges the results into what waits for their resource (one entry per
policy and rule, the newest kept) and returns; when too many resources wait, results are dropped and counted
(quartermaster_reports_dropped_total), never waited for. Merging as results arrive keeps the memory held by
what waits proportional to the resources, not to the admissions, and spreads the work over the requests
instead of leaving it to one batch that would hold the event loop. A writer task takes the waiting resources
in batches, waits for resources that are new to show in the informer (their uid makes the report owned by
them), and writes reports (read-merge-PUT with optimistic concurrency, so replicas never lose each other's
results) and the Events policies ask for, a few at a time, in worker threads.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Mapping

from kubernetes.client.exceptions import ApiException

from webhook.kube.calls import BlockingCalls
from webhook.kube.client import ApiStatus, KubeApi
from webhook.kube.resources import EVENTS, report_type
from webhook.kube.settings import LiveSettings
from webhook.model.results import PolicyId, RuleResult
from webhook.observability.metrics import Metrics
from webhook.reports.events import event_for
from webhook.reports.policyreport import (PolicyMeta, build_report, merge_results, report_name, result_entry,
                                          same_results)
from webhook.reports.sink import ReportEntry, ResourceRef

log = logging.getLogger(__name__)

WRITE_TRIES = 3  # read-merge-write rounds when another replica writes the same report
KNOWN_REPORTS = 5_000  # last written reports kept, to skip the read before the next write


class Resolution(Enum):
    READY = "ready"
    WAIT = "wait"  # not in the informer yet
    DROP = "drop"  # cannot be tied to an object


@dataclass
class _Pending:
    resource: ResourceRef
    # (policy, rule) -> (its newest result, when it was submitted)
    entries: dict[tuple[PolicyId, str], tuple[RuleResult, float]] = field(default_factory=dict)
    events: list[ReportEntry] = field(default_factory=list)
    report: bool = True  # False: the request was denied, only Events (if asked) are due
    since: float = 0.0
    attempts: int = 0


Resolver = Callable[[ResourceRef], tuple[Resolution, ResourceRef]]


class NamespaceBudget:
    """At most `limit` uses per namespace in each window of `window` seconds."""

    def __init__(self, limit: int, window: float, clock: Callable[[], float]) -> None:
        self.limit, self.window, self.clock = limit, window, clock
        self._used: dict[str, tuple[float, int]] = {}  # namespace -> (window start, uses)

    def take(self, namespace: str) -> bool:
        now = self.clock()
        start, used = self._used.get(namespace, (now, 0))
        if now - start >= self.window:
            start, used = now, 0
        if used >= self.limit:
            return False
        self._used[namespace] = (start, used + 1)
        if len(self._used) > 10 * KNOWN_REPORTS:  # namespaces come and go: forget the oldest windows
            for key in sorted(self._used, key=lambda k: self._used[k][0])[: len(self._used) // 2]:
                del self._used[key]
        return True


def _cut(entry: dict[str, Any], limit: int) -> dict[str, Any]:
    message = entry.get("message")
    if isinstance(message, str) and len(message.encode()) > limit:
        entry = {**entry, "message": message.encode()[: limit - 3].decode(errors="ignore") + "..."}
    return entry


class PolicyReportWriter:
    def __init__(self, api: KubeApi, calls: BlockingCalls, settings: LiveSettings, metrics: Metrics,
                 policy_meta: Callable[[PolicyId], PolicyMeta], known_policies: Callable[[], frozenset[str]],
                 resolve: Resolver, clock: Callable[[], float] = time.monotonic) -> None:
        self.api = api
        self.calls = calls
        self.settings = settings
        self.metrics = metrics
        self.policy_meta = policy_meta
        self.known_policies = known_policies
        self.resolve = resolve
        self.clock = clock
        fmt = settings.report_format
        self._report_types = {namespaced: report_type(fmt, namespaced) for namespaced in (True, False)}
        self._pending: dict[tuple[str, str, str, str], _Pending] = {}  # oldest first
        self._known: OrderedDict[tuple[str, str], dict[str, Any]] = OrderedDict()
        self._known_lock = threading.Lock()  # written from several worker threads
        self._wake = asyncio.Event()
        self._pending_per_namespace: dict[str, int] = {}
        self._events_budget = NamespaceBudget(settings.events_per_namespace, settings.report_window_seconds, clock)
        self._reports_budget = NamespaceBudget(settings.reports_per_namespace, settings.report_window_seconds, clock)
        self.dropped = 0
        self.writes = 0  # report PUTs and POSTs
        self.events = 0
        self.batches = 0

    # --- the request path ----------------------------------------------------------------------
    def submit(self, resource: ResourceRef, results: tuple[RuleResult, ...], background: bool = False) -> None:
        """`background`: results of a scan, about a resource as it exists (an enforced failure denied nothing)."""
        if not results:
            return
        key = (resource.api_version, resource.kind, resource.namespace, resource.name)
        pending = self._pending.get(key)
        if pending is None:
            if (len(self._pending) >= self.settings.report_queue
                    or self._pending_per_namespace.get(resource.namespace, 0) >= self.settings.report_pending_per_namespace):
                self._drop(len(results))
                return
            pending = self._pending[key] = _Pending(resource, since=self.clock())
            self._pending_per_namespace[resource.namespace] = self._pending_per_namespace.get(resource.namespace, 0) + 1
        elif resource.uid and not pending.resource.uid:
            pending.resource = resource
        stamp = time.time()
        denied = not background and any(r.blocks for r in results)
        for result in results:
            if self.policy_meta(result.policy).wants_event(result.outcome):
                if len(pending.events) < self.settings.events_per_namespace:
                    pending.events.append(ReportEntry(resource, result, stamp))
                else:  # more than the namespace may be sent in a window
                    self._drop(1)
            if not denied:  # a denied request changed nothing: its results are the user's error message
                pending.entries[(result.policy, result.rule)] = (result, stamp)
        pending.report = bool(pending.entries)
        if not pending.entries and not pending.events:
            self._forget(key)
        self._wake.set()

    def background_sink(self) -> "BackgroundSink":
        return BackgroundSink(self)

    @property
    def queued(self) -> int:
        """Resources whose results wait to be written."""
        return len(self._pending)

    def _drop(self, count: int) -> None:
        self.dropped += count
        self.metrics.report_dropped(count)

    # --- the writer task -----------------------------------------------------------------------
    async def run(self) -> None:
        while True:
            await self._wake.wait()
            await asyncio.sleep(self.settings.report_interval)  # let a batch gather
            self._wake.clear()
            try:
                await self.flush()
            except Exception:  # the writer must outlive any one bad batch
                log.exception("report batch failed")
            if self._pending:
                self._wake.set()

    async def flush(self) -> None:
        """Look at the `report_batch` resources that waited longest; write those the informer shows."""
        ready: list[tuple[ResourceRef, _Pending]] = []
        now = self.clock()
        for key in list(itertools.islice(self._pending, self.settings.report_batch)):
            pending = self._pending[key]
            resolution, resolved = self.resolve(pending.resource)
            if resolution is Resolution.READY:
                ready.append((resolved, self._forget(key)))
            elif resolution is Resolution.DROP or now - pending.since > self.settings.report_resolve_seconds:
                # never showed up: denied later by another webhook, or deleted already
                self._forget(key)
            else:  # not in the informer yet: behind the others, so that a batch always moves on
                self._pending[key] = self._pending.pop(key)
        if not ready:
            return
        self.batches += 1
        limit = asyncio.Semaphore(self.settings.report_concurrency)
        budget = [self.settings.events_per_batch]
        await asyncio.gather(*(self._write_one(ref, pending, limit, budget) for ref, pending in ready))

    def _forget(self, key: tuple[str, str, str, str]) -> _Pending:
        pending = self._pending.pop(key)
        namespace = key[2]
        left = self._pending_per_namespace.get(namespace, 1) - 1
        if left > 0:
            self._pending_per_namespace[namespace] = left
        else:
            self._pending_per_namespace.pop(namespace, None)
        return pending

    async def _write_one(self, ref: ResourceRef, pending: _Pending, limit: asyncio.Semaphore, budget: list[int]) -> None:
        async with limit:
            try:
                if pending.report:
                    limit = self.settings.report_message_bytes
                    new = [_cut(result_entry(ReportEntry(ref, result, stamp), self.policy_meta(result.policy)), limit)
                           for result, stamp in pending.entries.values()]
                    await self.calls(self._write_report, ref, new, self.known_policies())
                    pending.report = False  # written: a retry for the events must not write it again
                while pending.events and budget[0] > 0:
                    if not self._events_budget.take(ref.namespace):
                        self._drop(len(pending.events))  # this namespace had its share of Events in this window
                        pending.events.clear()
                        break
                    budget[0] -= 1
                    await self.calls(self.api.create, EVENTS, event_for(ref, pending.events[0].result, self.settings.who),
                                     self.settings.api_timeout)
                    pending.events.pop(0)  # sent: a retry must not send it twice
                    self.events += 1
            except Exception as exc:
                self._retry_later(ref, pending, exc)

    def _retry_later(self, ref: ResourceRef, pending: _Pending, exc: Exception) -> None:
        pending.attempts += 1
        reason = str(ApiStatus.of(exc)) if isinstance(exc, ApiException) else f"{type(exc).__name__}: {exc}"
        if pending.attempts >= self.settings.report_attempts:
            log.warning("dropping the report of %s %s/%s after %d attempts: %s", ref.kind, ref.namespace, ref.name,
                        pending.attempts, reason)
            self._drop(len(pending.entries) or len(pending.events))
            return
        log.info("report of %s %s/%s not written (%s); retrying", ref.kind, ref.namespace, ref.name, reason)
        key = (ref.api_version, ref.kind, ref.namespace, ref.name)
        pending.resource, pending.since = ref, self.clock()
        current = self._pending.get(key)
        if current is None:
            self._pending[key] = pending
            self._pending_per_namespace[ref.namespace] = self._pending_per_namespace.get(ref.namespace, 0) + 1
        else:  # newer results arrived meanwhile: they win
            current.entries = {**pending.entries, **current.entries}
            current.events = pending.events + current.events
            current.report = current.report or pending.report
            current.attempts = max(current.attempts, pending.attempts)

    # --- blocking, in a worker thread ----------------------------------------------------------
    def _write_report(self, ref: ResourceRef, new: list[dict[str, Any]], known: frozenset[str]) -> None:
        resource = self._report_types[bool(ref.namespace)]
        name = report_name(ref)
        key = (ref.namespace, name)
        with self._known_lock:
            existing = self._known.get(key)
        for attempt in range(WRITE_TRIES):
            if existing is None or attempt:
                existing = self.api.get(resource, ref.namespace, name, self.settings.api_timeout)
            old = (existing or {}).get("results") or []
            results = merge_results(old, new, known)
            if existing is not None and same_results(old, results):
                self._remember(key, existing)
                return
            if existing is None and not self._new_report_allowed(ref.namespace):
                self._drop(len(new))  # this namespace had its share of new reports in this window
                return
            body = build_report(ref, results, existing, self.settings.report_format)
            try:
                if existing is None:
                    written = self.api.create(resource, body, self.settings.api_timeout)
                else:
                    written = self.api.replace(resource, body, self.settings.api_timeout)
            except ApiException as exc:
                if exc.status == 409 and attempt + 1 < WRITE_TRIES:  # another replica wrote first: merge again
                    continue
                raise
            self.writes += 1
            self._remember(key, written)
            return

    def _new_report_allowed(self, namespace: str) -> bool:
        with self._known_lock:  # called from worker threads
            return self._reports_budget.take(namespace)

    def _remember(self, key: tuple[str, str], report: Mapping[str, Any]) -> None:
        with self._known_lock:
            self._known[key] = dict(report)
            self._known.move_to_end(key)
            while len(self._known) > KNOWN_REPORTS:
                self._known.popitem(last=False)


class BackgroundSink:
    """The sink the background scan's engine writes to: same queue, results marked as a scan's."""

    def __init__(self, writer: PolicyReportWriter) -> None:
        self.writer = writer

    def submit(self, resource: ResourceRef, results: tuple[RuleResult, ...]) -> None:
        self.writer.submit(resource, results, background=True)
