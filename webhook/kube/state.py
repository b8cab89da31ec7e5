"""The live ClusterState: reads from the informers' caches, writes through the API.

Reads never touch the network (an admission must not wait on a list). `create` is the one write
admission makes (claim templates the mutate phase needs): already-exists is success, conflicts
and overload are retried, all within the time the engine gives it; when the API does not answer
in time the caller gets StateUnavailable and the engine denies with that message.
`record_admitted`/`record_deleted` do nothing: the informers are the truth, and the quota ledger
keeps its reservations until they show the object.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Callable, Mapping

import urllib3
from kubernetes.client.exceptions import ApiException

from webhook.kube.cache import ObjectCache
from webhook.kube.calls import BlockingCalls
from webhook.kube.client import ApiStatus, KubeApi
from webhook.kube.informer import EventHook, Informer, InformerStatus, backoff_delay
from webhook.kube.resources import WATCHED, ResourceType, resource_for
from webhook.kube.settings import LiveSettings
from webhook.model.cluster import CLUSTER_SCOPED, CreateResult, ObjectKey, StateRefused, StateUnavailable, never_expires
from webhook.state.lookups import StateLookups
from webhook.state.packed import packs

log = logging.getLogger(__name__)

RETRYABLE_CODES = frozenset({409, 429, 500, 502, 503, 504})  # 409 except AlreadyExists, which is success


class ApiRefused(StateRefused):
    """The API answered, and said no (403, 422, ...): retrying will not help."""


def retryable(status: ApiStatus) -> bool:
    return status.code in RETRYABLE_CODES and status.reason != "AlreadyExists"


class LiveClusterState:
    def __init__(self, api: KubeApi, settings: LiveSettings, calls: BlockingCalls,
                 resources: tuple[ResourceType, ...] = WATCHED) -> None:
        self.api = api
        self.settings = settings
        self.calls = calls
        self.caches = {r.kind: ObjectCache(r.namespaced, packs(r.kind)) for r in resources}
        self.informers = {r.kind: Informer(api, r, self.caches[r.kind], settings, self._event) for r in resources}
        self._listeners: list[tuple[EventHook, Callable[[], bool]]] = []
        # policies may look up what the informers hold; other kinds are refused, never fetched per request
        self.lookups = StateLookups(self.get, self.list, lambda kind: kind in self.caches,
                                    "the live cluster cache (informers for " + ", ".join(sorted(self.caches)) + ")")

    # --- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> None:
        for informer in self.informers.values():
            informer.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every informer; a thread stuck in a request ends with its request timeout (daemon threads)."""
        for informer in self.informers.values():
            informer.stop(timeout=0)
        deadline = time.monotonic() + timeout
        for informer in self.informers.values():
            informer.stop(timeout=max(0.0, deadline - time.monotonic()))

    def add_listener(self, hook: EventHook, expired: Callable[[], bool] = never_expires) -> bool:
        """Called from informer threads on every change (and "RELIST"). The list is replaced, never edited, so
        an informer thread iterating the old one is undisturbed."""
        self._listeners = [(h, e) for h, e in self._listeners if not e()] + [(hook, expired)]
        return True

    def _event(self, kind: str, event: str, obj: Mapping[str, Any] | None) -> None:
        for hook, _ in self._listeners:
            try:
                hook(kind, event, obj)
            except Exception:  # a listener bug must not kill an informer
                log.exception("state listener failed")

    # --- reads ---------------------------------------------------------------------------------------
    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        cache = self.caches.get(kind)
        return cache.get("" if kind in CLUSTER_SCOPED else namespace, name) if cache else None

    def list(self, kind: str, namespace: str = "") -> list[Mapping[str, Any]]:
        cache = self.caches.get(kind)
        return cache.list(namespace) if cache else []

    def kinds(self) -> list[str]:
        """The kinds the informers hold (background scans look at all of them)."""
        return list(self.caches)

    @property
    def synced(self) -> bool:
        """Ready to answer: every kind listed once, and no watch stalled (a stale cache makes wrong decisions)."""
        return all(s.synced and not s.stalled for s in self.statuses())

    def statuses(self) -> list[InformerStatus]:
        return [informer.status() for informer in self.informers.values()]

    def sync_details(self) -> dict[str, Any]:
        """For /readyz: per kind, whether it synced, whether its watch stalled, and the last error."""
        return {s.kind: {"synced": s.synced, "stalled": s.stalled, "absent": s.absent,
                         "secondsSinceProgress": s.seconds_since_progress, "relists": s.relists,
                         "lastError": s.last_error} for s in self.statuses()}

    async def read_through(self, kind: str, namespace: str, name: str, timeout: float) -> Mapping[str, Any] | None:
        """The cache's object, else one bounded GET. What the GET finds is kept as a hint and reported to the
        listeners as ADDED (a quota decision on this replica must count a claim template the other replica just
        created for the pod it judges); a read that fails or finds nothing leaves the cache as it was."""
        cached = self.get(kind, namespace, name)
        informer = self.informers.get(kind)
        if cached is not None or informer is None:
            return cached
        cache = self.caches[kind]
        mark = cache.mark()
        namespace = "" if kind in CLUSTER_SCOPED else namespace
        try:
            found = await asyncio.wait_for(
                self.calls(self.api.get, informer.resource, namespace, name, (min(self.settings.connect_timeout,
                                                                                  timeout), timeout)), timeout)
        except Exception as exc:  # the caller decides on what the cache shows, as it would have without asking
            log.info("reading %s %s/%s through the API failed: %s", kind, namespace, name, exc)
            return None
        if found is None:
            return None
        if cache.put_hint(found, mark):
            self._event(kind, "ADDED", found)
        return self.get(kind, namespace, name) or found

    # --- writes ------------------------------------------------------------------------------------
    def record_admitted(self, obj: Mapping[str, Any], operation: str) -> None:
        """Nothing: the informer will show the object once the API server persisted it."""

    def record_deleted(self, kind: str, namespace: str, name: str, options: Mapping[str, Any] | None = None) -> None:
        """Nothing: the informer will show the deletion."""

    async def create(self, obj: Mapping[str, Any], timeout: float) -> CreateResult:
        key = ObjectKey.of(obj)
        cached = self.get(key.kind, key.namespace, key.name)
        if cached is not None:
            # exists already, as an AlreadyExists answer would say; a create would still run every validating
            # admission on it first (a claim template shared by a profile's pods would be charged again, and refused
            # once the profile is full, with a confusing message instead of the pod's own quota denial)
            return CreateResult(False, cached)
        resource = resource_for(str(obj.get("apiVersion", "")), key.kind, namespaced=key.kind not in CLUSTER_SCOPED)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        cache = self.caches.get(key.kind)
        mark = cache.mark() if cache is not None else 0
        attempt, last = 0, ""
        while (remaining := deadline - loop.time()) > 0.01:
            try:
                request_timeout = (min(self.settings.connect_timeout, remaining), remaining)
                created = await asyncio.wait_for(self.calls(self.api.create, resource, obj, request_timeout), remaining)
            except asyncio.TimeoutError:
                break
            except ApiException as exc:
                status = ApiStatus.of(exc)
                if status.code == 409 and status.reason == "AlreadyExists":
                    return CreateResult(False, await self._existing(resource, key, obj, deadline))
                if not retryable(status):
                    raise ApiRefused(f"the Kubernetes API refused it: {status}") from None
                last = str(status)
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                last = f"{type(exc).__name__}"
            else:
                if cache is not None and cache.put_hint(created, mark):  # a hint until the watch delivers it
                    self._event(key.kind, "ADDED", created)  # the counts that read it must see it too
                return CreateResult(True, created)
            attempt += 1
            log.info("creating %s: %s; retrying", key, last)
            delay = backoff_delay(attempt, self.settings.create_retry_initial, 1.0)
            await asyncio.sleep(min(delay, max(0.0, deadline - loop.time())))
        detail = f" (last answer: {last})" if last else ""
        raise StateUnavailable(f"the Kubernetes API did not answer within {timeout:.1f}s{detail}")

    async def _existing(self, resource: ResourceType, key: ObjectKey, wanted: Mapping[str, Any],
                        deadline: float) -> Mapping[str, Any]:
        """The object that already exists: from the cache, else one bounded GET, else what we asked for."""
        cached = self.get(key.kind, key.namespace, key.name)
        if cached is not None:
            return cached
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining > 0.05:
            try:
                found = await asyncio.wait_for(
                    self.calls(self.api.get, resource, key.namespace, key.name, remaining), remaining)
                if found is not None:
                    return found
            except Exception as exc:  # the create succeeded in effect; the object's body is a nicety
                log.info("reading existing %s failed: %s", key, exc)
        return wanted
