"""The reservation ledger the replicas share, through the API server (webhook/state/replicas.py has the contract).

For each admission that adds usage in a profile: read the profile's ledger (ledger_page.py), decide again
with the other replicas' unexpired Holds if there are any (the quota leaves out those whose object its count
includes already), and write the ledger with this admission's Hold, preconditioned on the resourceVersion
that was read. A 409 means another replica wrote in between: read again and decide again. So of two
replicas racing for the last GPU, exactly one records its Hold; the other then counts it.

A Hold is not counted once the quota's count includes its object (the same uid; for an UPDATE, a
resourceVersion past the one it replaced) or the informers showed its deletion: the object is counted itself
then, or it is gone.

All of it within the admission's deadline: when the API does not answer in time, StateUnavailable says so
and the quota policy's failurePolicy decides. Expiry is judged on wall clocks (replicas on different
nodes): keep reservationSeconds well above the clock skew between nodes.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import OrderedDict
from dataclasses import replace
from typing import Any, Awaitable, Callable, Mapping, Protocol, TypeVar

import urllib3
from kubernetes.client.exceptions import ApiException

from webhook.kube.calls import BlockingCalls
from webhook.kube.client import ApiStatus, KubeApi
from webhook.kube.informer import EventHook, backoff_delay
from webhook.kube.ledger_page import LedgerPage, ledger_name
from webhook.kube.resources import CONFIG_MAPS
from webhook.kube.settings import LiveSettings
from webhook.kube.state import ApiRefused, retryable
from webhook.model.cluster import StateUnavailable
from webhook.state.replicas import Hold, HoldScope, Ruling

log = logging.getLogger(__name__)

D = TypeVar("D")
MARGIN = 0.1  # seconds left to the engine to answer with our message rather than its own timeout
DEPARTED_LIMIT = 100_000  # uids of deleted objects remembered; beyond that the oldest are forgotten
DEPARTED_SECONDS = 3_600.0  # the longest reservationSeconds a ProfileQuota accepts


class WatchedState(Protocol):
    """What the ledger reads of the live ClusterState: its informers' events (deletions end Holds)."""

    def add_listener(self, hook: EventHook, expired: Callable[[], bool] = ...) -> bool: ...


class Departed:
    """Uids of objects the informers saw deleted: a Hold for one of them is over (its object came and went)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, kind: str, event: str, obj: Mapping[str, Any] | None) -> None:
        """The state's listener (informer threads)."""
        if event != "DELETED" or obj is None:
            return
        uid = str((obj.get("metadata") or {}).get("uid") or "")
        if not uid:
            return
        now = self.clock()
        with self._lock:
            self._seen[uid] = now
            self._seen.move_to_end(uid)
            while self._seen and (len(self._seen) > DEPARTED_LIMIT
                                  or next(iter(self._seen.values())) < now - DEPARTED_SECONDS):
                self._seen.popitem(last=False)

    def __contains__(self, uid: object) -> bool:
        with self._lock:
            return uid in self._seen


class ApiReservations:
    """Live mode's SharedReservations: one ConfigMap per profile in the webhook's namespace."""

    def __init__(self, api: KubeApi, calls: BlockingCalls, state: WatchedState, settings: LiveSettings,
                 clock: Callable[[], float] = time.time) -> None:
        self.api = api
        self.calls = calls
        self.state = state
        self.settings = settings
        self.clock = clock  # wall clock: expiries are compared across replicas
        self.departed = Departed()
        state.add_listener(self.departed)
        self.conflicts = 0  # writes another replica beat, for tests and logs
        # Holds of requests refused after all (by another policy), per (policy, profile): not counted here, and
        # dropped from the ledger by this replica's next write there
        self.withdrawn: dict[tuple[str, str], dict[str, float]] = {}

    def withdraw(self, scope: HoldScope, hold: Hold) -> None:
        self.withdrawn.setdefault((scope.policy, scope.namespace), {})[hold.uid] = self.clock() + scope.seconds

    def _withdrawn(self, scope: HoldScope) -> dict[str, float]:
        held = self.withdrawn.get((scope.policy, scope.namespace), {})
        now = self.clock()
        for uid in [u for u, expires in held.items() if expires <= now]:  # expired anyway: nothing left to drop
            del held[uid]
        return held

    def live(self, page: LedgerPage, scope: HoldScope, mine: Hold) -> tuple[Hold, ...]:
        """Other replicas' unexpired Holds, whether or not this replica's state shows their objects yet (the judge
        leaves out those its count includes); a Hold whose object the informers saw deleted is over."""
        now = self.clock()
        withdrawn = self._withdrawn(scope)
        return tuple(h for h in page.holds(scope.policy).values()
                     if h.expires > now and h.uid != mine.uid and h.uid not in scope.counted
                     and h.uid not in withdrawn and h.uid not in self.departed)

    async def hold(self, scope: HoldScope, first: Ruling[D], judge: Callable[[tuple[Hold, ...]], Awaitable[Ruling[D]]]
                   ) -> Ruling[D]:
        if first.hold is None:
            return first
        mine = first.hold
        name = ledger_name(self.settings.ledger_name, scope.namespace)
        where = f"{self.settings.namespace}/{name}"
        attempt, last = 0, ""
        while (remaining := scope.deadline - MARGIN - time.monotonic()) > 0.01:
            try:
                timeout = (min(self.settings.connect_timeout, remaining), remaining)
                found = await asyncio.wait_for(
                    self.calls(self.api.get, CONFIG_MAPS, self.settings.namespace, name, timeout), remaining)
                page = LedgerPage.of(self.settings.namespace, name, found)
                live = self.live(page, scope, mine)
                # `first` was decided on the state as it was before this read: a Hold whose object the state shows
                # only now is counted by the state, so the decision is taken again on the state as it is now
                ruling = first if not live else await judge(live)
                if ruling.hold is None or not ruling.record:
                    return ruling  # refused with the other replicas' Holds counted, or a dry run: nothing to record
                now = self.clock()
                dropped = tuple(self._withdrawn(scope))
                body = page.written(scope.policy, replace(ruling.hold, expires=now + scope.seconds), now, scope.namespace,
                                    dropped)
                write = self.api.replace if page.resource_version else self.api.create
                remaining = scope.deadline - MARGIN - time.monotonic()
                timeout = (min(self.settings.connect_timeout, max(remaining, 0.01)), max(remaining, 0.01))
                await asyncio.wait_for(self.calls(write, CONFIG_MAPS, body, timeout), max(remaining, 0.01))
                held = self.withdrawn.get((scope.policy, scope.namespace), {})
                for uid in dropped:
                    held.pop(uid, None)
                return ruling
            except asyncio.TimeoutError:
                break
            except ApiException as exc:
                status = ApiStatus.of(exc)
                if status.code == 409:  # Conflict, or AlreadyExists: another replica wrote first; decide again
                    self.conflicts += 1
                    last = str(status)
                    continue
                if not retryable(status):
                    raise ApiRefused(f"the Kubernetes API refused the quota ledger {where}: {status}") from None
                last = str(status)
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                last = type(exc).__name__
            attempt += 1
            log.info("quota ledger %s: %s; retrying", where, last)
            delay = backoff_delay(attempt, self.settings.create_retry_initial, 1.0)
            await asyncio.sleep(min(delay, max(0.0, scope.deadline - MARGIN - time.monotonic())))
        detail = f" (last answer: {last})" if last else ""
        raise StateUnavailable(f"the Kubernetes API did not answer in time to record this reservation in the quota "
                               f"ledger {where}{detail}; try again in a minute")
