"""In-flight reservations: objects a policy admitted that the cluster state does not show yet.

Between "the quota check admitted this pod" and "the state lists this pod" there is a window: other
validating policies still run, the API server persists the object, an informer delivers it. A second
request in that window would count without the first one and both could pass where only one fits.
The ledger closes the window: decisions for one scope (a profile namespace) are serialized by one
asyncio lock per scope, never one global lock, and each admitted object stays reserved until

- the cluster state shows it (a CREATE: the key exists, with the same uid when the object had one;
  an UPDATE: the object's resourceVersion moved past the versions it had when we decided),
- the request is denied after all (the engine calls the rollback this module hands out), or
- a timeout passes: another webhook may have refused it, and nothing tells us.

The ledger is per process. Several webhook replicas each keep their own; what they share is a second
ledger in the API (replicas.py: live mode records each admission that adds usage there too).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any, Callable, Mapping, Protocol

from webhook.model.cluster import POD, RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE, ObjectKey
from webhook.model.quickinit import frozen_dataclass
from webhook.state.replicas import Hold, ProcessReservations, SharedReservations
from webhook.state.claim_authors import ClaimAuthors


@frozen_dataclass(dict_init=True)
class Reservation:
    scope: str
    key: ObjectKey
    object: Mapping[str, Any]  # the object as admitted, laid over the state until it shows there
    uid: str  # metadata.uid of the admitted object; "" when the request carried none
    update: bool
    stale_versions: frozenset[str]  # resourceVersions that predate this change (UPDATE only)
    expires_at: float
    serial: int


class CountedObjects(Protocol):
    """The objects a quota decision counts. A reservation (or another replica's Hold) stops counting only once
    these show its object: in live mode the informer's cache shows an object a moment before the usage index
    has re-read it, so asking the cache instead would drop a reservation the count does not include yet."""

    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None: ...


def _meta(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (obj or {}).get("metadata") or {}


def charges_shown(state: CountedObjects, namespace: str, pod: Mapping[str, Any]) -> bool:
    """Does the state show the claim templates the pod names, and the claims generated from them? A pod's GPUs
    are theirs; watches of different kinds keep no order between them, so a pod shown before them would be
    charged nothing, and what was held for it must count until they show too."""
    spec_claims = ((pod.get("spec") or {}).get("resourceClaims")) or []
    status_claims = ((pod.get("status") or {}).get("resourceClaimStatuses")) or []
    # a claim the pod names by resourceClaimName is charged as itself, never through the pod: not waited for
    needed = [(RESOURCE_CLAIM_TEMPLATE, c.get("resourceClaimTemplateName")) for c in spec_claims if isinstance(c, dict)]
    needed += [(RESOURCE_CLAIM, c.get("resourceClaimName")) for c in status_claims if isinstance(c, dict)]
    return all(state.get(kind, namespace, str(name)) is not None for kind, name in needed if name)


def reflected(reservation: Reservation, state: CountedObjects) -> bool:
    """Does the state already show what this reservation stands for?"""
    key = reservation.key
    current = state.get(key.kind, key.namespace, key.name)
    if reservation.update:
        if current is None:
            return True  # deleted meanwhile: nothing left to hold
        if reservation.uid and _meta(current).get("uid") not in ("", None, reservation.uid):
            return True  # replaced by a new object of the same name
        return str(_meta(current).get("resourceVersion", "")) not in reservation.stale_versions
    if current is None:
        return False
    if reservation.uid and _meta(current).get("uid") not in (None, "", reservation.uid):
        return False
    return key.kind != POD or charges_shown(state, key.namespace, current)


def hold_shown(state: CountedObjects, namespace: str, hold: Hold) -> bool:
    """Does `state` count the object of another replica's Hold already (then the Hold is not counted beside it)?"""
    current = state.get(hold.kind, namespace, hold.name)
    meta = _meta(current)
    if current is None or meta.get("uid") != hold.uid:
        return False
    if hold.replaces and str(meta.get("resourceVersion", "")) == hold.replaces:
        return False
    return hold.kind != POD or charges_shown(state, namespace, current)


class ReservationLedger:
    """Per-scope locks and reservations. Used from one event loop; not thread-safe by design."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._locks: dict[str, asyncio.Lock] = {}
        self._reservations: dict[str, dict[int, Reservation]] = {}
        self._serial = itertools.count(1)
        # which extended-resource claims the scheduler created: kept, as the reservations, across reloads
        self.claim_authors = ClaimAuthors()

    def lock(self, scope: str) -> asyncio.Lock:
        """The lock for one scope. Bounded by the number of profiles, so locks are kept, not pruned."""
        lock = self._locks.get(scope)
        if lock is None:
            lock = self._locks[scope] = asyncio.Lock()
        return lock

    def reserve(self, scope: str, obj: Mapping[str, Any], state: CountedObjects, timeout: float,
                previous: Mapping[str, Any] | None = None) -> Reservation:
        """Hold `obj` for `timeout` seconds. `previous` is the old object of an UPDATE (None for a CREATE)."""
        key = ObjectKey.of(obj)
        stale: frozenset[str] = frozenset()
        if previous is not None:
            current = state.get(key.kind, key.namespace, key.name)
            stale = frozenset(v for v in (str(_meta(current).get("resourceVersion", "")),
                                          str(_meta(previous).get("resourceVersion", ""))))
        reservation = Reservation(scope, key, obj, str(_meta(obj).get("uid") or ""), previous is not None, stale,
                                  self.clock() + timeout, next(self._serial))
        self._reservations.setdefault(scope, {})[reservation.serial] = reservation
        return reservation

    def release(self, reservation: Reservation) -> bool:
        """Idempotent: a rollback after the reservation was already reflected or expired is harmless."""
        held = self._reservations.get(reservation.scope)
        if not held or held.pop(reservation.serial, None) is None:
            return False
        if not held:
            del self._reservations[reservation.scope]
        return True

    def pending(self, scope: str, state: CountedObjects) -> tuple[Reservation, ...]:
        """The reservations of one scope still in flight, oldest first; those `state` shows and expired ones are
        dropped (for good: pass the objects the decision counts, never a fresher view than those)."""
        held = self._reservations.get(scope)
        if not held:
            return ()
        now = self.clock()
        for reservation in list(held.values()):
            if reservation.expires_at <= now or reflected(reservation, state):
                del held[reservation.serial]
        if not held:
            del self._reservations[scope]
            return ()
        return tuple(held.values())

    def release_key(self, key: ObjectKey) -> int:
        """The object was deleted: whatever was reserved for it is not in flight any more (a create and a
        delete can both pass before anything asks for the scope's reservations again)."""
        held = self._reservations.get(key.namespace, {})
        gone = [r for r in held.values() if r.key == key]
        for reservation in gone:
            self.release(reservation)
        if key.kind == RESOURCE_CLAIM:
            self.claim_authors.forget(key.namespace, key.name)
        return len(gone)

    def uids(self, scope: str) -> frozenset[str]:
        """The uids this process holds in `scope` (without pruning): other replicas' copies of them are not counted."""
        return frozenset(r.uid for r in self._reservations.get(scope, {}).values() if r.uid)

    def count(self, scope: str | None = None) -> int:
        """How many reservations are held (without pruning), for tests and metrics."""
        if scope is not None:
            return len(self._reservations.get(scope, {}))
        return sum(len(held) for held in self._reservations.values())


class ReservationLedgers:
    """One ledger per quota policy name, for the life of the process.

    The composition root creates it once and hands it to the quota battery: a policy reload compiles
    new policy objects, and their in-flight reservations must survive that. `shared` is what the replicas
    share (replicas.py): one process alone by default; live mode sets the API-backed ledger with `share`
    before the first policy is compiled (policies read it when they are compiled).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._ledgers: dict[str, ReservationLedger] = {}
        self.shared: SharedReservations = ProcessReservations()

    def share(self, shared: SharedReservations) -> None:
        self.shared = shared

    def for_policy(self, name: str) -> ReservationLedger:
        ledger = self._ledgers.get(name)
        if ledger is None:
            ledger = self._ledgers[name] = ReservationLedger(self.clock)
        return ledger

    def release_deleted(self, key: ObjectKey) -> int:
        """Release what any quota policy reserved for an object that was deleted."""
        return sum(ledger.release_key(key) for ledger in list(self._ledgers.values()))

    def all(self) -> tuple[ReservationLedger, ...]:
        return tuple(self._ledgers.values())
