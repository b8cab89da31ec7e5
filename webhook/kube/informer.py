"""List, then watch from the listed resourceVersion, in a thread of its own (the client blocks).

As client-go's reflector: bookmarks move the resourceVersion on; a watch that ends (server
timeout, dropped connection) resumes from the last version seen; `410 Gone` (the version was
compacted away) means relist; failures back off exponentially, capped, with jitter, so replicas
do not reconnect in lockstep after an API server restart. "Stalled" means no progress (a list,
an event, a bookmark, a clean watch end) for `stall_seconds`: /readyz reports it.

What the API server sends is checked as a review is (webhook.model.review.object_problem) before it
reaches the cache: an object policies and quotas could not read, or a watch event that is not one
(a line that is not JSON, an ERROR of no known shape), means the cache can no longer be trusted to
be complete. The informer then reports itself unsynced (every policy errors and its failurePolicy
decides: quota fails closed) and relists after a back-off; a list holding such an object is refused
whole. Before, the event was retried from the same version for ever while the informer counted each
accepted watch as progress: /readyz said ready on a cache that had stopped.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

import urllib3
from kubernetes import watch
from kubernetes.client.exceptions import ApiException

from webhook.kube.cache import ObjectCache
from webhook.kube.client import ApiStatus, KubeApi
from webhook.kube.resources import ResourceType
from webhook.kube.settings import LiveSettings
from webhook.model.quickinit import frozen_dataclass
from webhook.model.review import object_problem

log = logging.getLogger(__name__)

EventHook = Callable[[str, str, Mapping[str, Any] | None], None]  # (kind, event type, object)


def backoff_delay(failures: int, initial: float, cap: float, rng: Callable[[], float] = random.random) -> float:
    """Exponential, capped, with jitter in [delay/2, delay]."""
    delay = min(cap, initial * (2 ** max(0, failures - 1)))
    return delay * (0.5 + rng() / 2)


@frozen_dataclass
class InformerStatus:
    kind: str
    synced: bool  # the first list is done
    stalled: bool
    absent: bool  # an optional CRD that is not installed
    seconds_since_progress: float
    relists: int
    watches: int
    last_error: str


@dataclass
class _Listed:
    """What a relist learnt besides its objects."""
    resource_version: str = ""
    count: int = 0


class _Gone(Exception):
    pass


class _Unreadable(Exception):
    """The API server sent something that is not a well-formed event or object of this kind."""


def unreadable(obj: Any, kind: str, namespaced: bool) -> str | None:
    """Why a listed or watched object cannot be cached (None when it can): it must be an object whose
    metadata names it (and its namespace, when namespaced), with the field types policies rely on."""
    if not isinstance(obj, dict):
        return f"a {kind} that is not an object ({type(obj).__name__})"
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        return f"a {kind} without metadata.name"
    if namespaced and not (isinstance(meta.get("namespace"), str) and meta["namespace"]):
        return f"{kind} {meta['name'][:100]!r} without metadata.namespace"
    problem = object_problem(obj, kind, kind)  # a List's items carry no kind: the resource's is theirs
    return f"{kind} {meta['name'][:100]!r}: {problem[:200]}" if problem else None


class Informer:
    def __init__(self, api: KubeApi, resource: ResourceType, cache: ObjectCache, settings: LiveSettings,
                 on_event: EventHook | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.api = api
        self.resource = resource
        self.cache = cache
        self.settings = settings
        self.on_event = on_event
        self.clock = clock
        self.resource_version = ""
        self.relists = 0
        self.watches = 0  # watch requests made: more than relists means watches resumed
        self.last_error = ""
        self._synced = threading.Event()
        self._absent = False
        self._progress = clock()
        self._failures = 0
        self._gone = 0
        self._stop = threading.Event()
        self._watcher: watch.Watch | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        self._progress = self.clock()
        self._thread = threading.Thread(target=self._run, name=f"informer-{self.resource.plural}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        watcher = self._watcher
        if watcher is not None:
            watcher.stop()  # shuts the socket down: unblocks a read in progress
        if self._thread is not None:
            self._thread.join(timeout)

    def wait_synced(self, timeout: float) -> bool:
        return self._synced.wait(timeout)

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    def status(self) -> InformerStatus:
        idle = self.clock() - self._progress
        return InformerStatus(self.resource.kind, self.synced, idle > self.settings.stall_seconds, self._absent,
                              round(idle, 3), self.relists, self.watches, self.last_error)

    # --- the loop ------------------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if not self.resource_version:
                    self._relist()
                if self._absent:
                    self._stop.wait(self.settings.absent_recheck_seconds)
                    self.resource_version = ""
                    continue
                delivered = self._watch_once()
                self._gone = 0
                self._failures = 0 if delivered else self._failures + 1
                if not delivered:  # a watch that ends at once, again and again, must not spin
                    self._stop.wait(self._backoff())
            except _Unreadable as exc:
                self._synced.clear()  # the cache may miss what that event said: not ready, relist
                self.resource_version = ""
                self._failures += 1
                self.last_error = f"the API server sent {exc}"[:300]
                log.warning("%s: %s; relisting", self.resource, self.last_error)
                self._stop.wait(self._backoff())
            except _Gone as exc:
                log.info("%s: %s; relisting", self.resource, exc)
                self.resource_version = ""
                self._gone += 1
                if self._gone > 1:  # relisted and expired again at once: do not hammer the API server
                    self._stop.wait(backoff_delay(self._gone - 1, self.settings.backoff_initial, self.settings.backoff_max))
            except Exception as exc:  # anything else: keep the version, back off, watch again
                if self._stop.is_set():
                    break
                self._failures += 1
                self.last_error = _describe(exc)
                delay = self._backoff()
                log.warning("%s: watch failed (%s); retrying in %.1fs", self.resource, self.last_error, delay)
                self._stop.wait(delay)

    def _backoff(self) -> float:
        return backoff_delay(self._failures, self.settings.backoff_initial, self.settings.backoff_max)

    def _relist(self) -> None:
        settings = self.settings
        listed = _Listed()
        try:
            # page by page, each page kept (pods packed) before the next is read; the cache swaps at the end
            self.cache.replace(self._listed_items(listed))
        except ApiException as exc:
            if exc.status == 404 and self.resource.optional:
                if not self._absent:
                    log.info("%s is not served (CRD not installed); looking again in %ss", self.resource,
                             settings.absent_recheck_seconds)
                self._absent = True
                self.cache.replace(())
                self._mark_progress(synced=True)
                return
            if exc.status == 410:
                raise _Gone("list expired") from None
            raise
        self._absent = False
        self.resource_version = listed.resource_version
        self.relists += 1
        self.last_error = ""
        self._mark_progress(synced=True)
        log.info("%s: listed %d objects at resourceVersion %s", self.resource, listed.count, listed.resource_version)
        if self.on_event:
            self.on_event(self.resource.kind, "RELIST", None)

    def _listed_items(self, listed: "_Listed") -> Iterator[Mapping[str, Any]]:
        """The list's objects as its pages arrive; an unreadable one ends the list before the cache changes."""
        settings = self.settings
        for page in self.api.list_pages(self.resource, (settings.connect_timeout, settings.list_timeout),
                                        settings.list_page_size):
            listed.resource_version = page.resource_version
            for item in page.items:
                problem = unreadable(item, self.resource.kind, self.resource.namespaced)
                if problem:
                    raise _Unreadable(f"a list holding {problem}")
                listed.count += 1
                yield item

    def _watch_once(self) -> bool:
        """One watch request; True when it delivered anything (an event or a bookmark)."""
        settings = self.settings
        self._watcher = watch.Watch()
        self.watches += 1
        server_timeout = int(settings.watch_seconds * (1 + random.random()))
        delivered = False
        try:
            # the server accepting a watch from our version means we are current up to it: progress, unless
            # the last watch failed (a server that accepts every watch, then errors, is not making any)
            for event in self.api.watch(self.resource, self.resource_version, server_timeout,
                                        (settings.connect_timeout, settings.watch_idle_seconds), self._watcher,
                                        on_open=None if self._failures else self._mark_progress):
                if self._stop.is_set():
                    break
                self._apply(event)
                delivered = True
        except ApiException as exc:
            if exc.status == 410:
                raise _Gone(f"resourceVersion {self.resource_version} expired") from None
            raise
        except (KeyError, TypeError, ValueError) as exc:
            # raised inside the client's watch for an ERROR event without code/reason, or a JSON line
            # that is not an object: the stream cannot be followed
            raise _Unreadable(f"a watch event the client could not read ({type(exc).__name__}: {exc})"[:200]) from None
        except urllib3.exceptions.ReadTimeoutError:
            # silent for watch_idle_seconds: maybe a half-open connection, maybe a quiet watch on a server
            # that sends no bookmarks; either way a new watch from the same version is the cure
            log.debug("%s: watch idle; reconnecting", self.resource)
            delivered = True
        finally:
            self._watcher = None
        self._mark_progress()  # the server ended the watch on time: we are current up to here
        if delivered:
            self.last_error = ""
        return delivered

    def _apply(self, event: Any) -> None:
        kind = event.get("type") if isinstance(event, dict) else None
        if kind not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK"):
            # the client yields None for a line that is not JSON; ERROR events it raises as ApiException
            raise _Unreadable(f"a watch event that is not one ({str(kind or type(event).__name__)[:50]})")
        obj = event.get("object")
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        if kind != "BOOKMARK":
            problem = unreadable(obj, self.resource.kind, self.resource.namespaced)
            if problem:
                raise _Unreadable(f"a {kind} event of {problem}")
        version = str(meta.get("resourceVersion") or "") if isinstance(meta, dict) else ""
        if kind in ("ADDED", "MODIFIED"):
            obj.setdefault("apiVersion", self.resource.api_version)
            obj.setdefault("kind", self.resource.kind)
            self.cache.put(obj)
        elif kind == "DELETED":
            self.cache.delete(obj)
        if version:
            self.resource_version = version
        self._mark_progress()
        if self.on_event and kind != "BOOKMARK":
            self.on_event(self.resource.kind, str(kind), obj)

    def _mark_progress(self, synced: bool = False) -> None:
        self._progress = self.clock()
        self.last_error = "" if synced else self.last_error
        if synced:
            self._synced.set()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ApiException):
        return str(ApiStatus.of(exc))
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:300]
