"""Reservations that several webhook replicas share: the "reservation ledger" a quota asks before it admits.

One process serializes the decisions for a profile with its own lock and holds what it admitted in its own
ReservationLedger (ledger.py) until its state shows it. Two replicas behind the API server have neither in
common: each could admit the last GPU in the same instant. So an admission that adds usage is also recorded
as a Hold in a ledger every replica reads, and the record is written only if the ledger did not change since
it was read (optimistic concurrency): of two replicas racing for the last GPU, one writes first, the other
re-reads, sees that Hold and decides again.

A Hold carries what the admission added (never the object: the ledger stays small) and an expiry. A replica
counts the Holds of the profile whose object its count does not include yet and that it does not hold itself,
on top of what its count shows, so nothing is counted twice.

Two implementations: ProcessReservations (standalone, one process: its locks and ledger are the whole truth,
there is nobody to share with) and the API-backed ledger of live mode (webhook/kube/reservations.py).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Awaitable, Callable, Generic, Protocol, TypeVar

from webhook.model.quickinit import frozen_dataclass

D = TypeVar("D")


@frozen_dataclass(dict_init=True)  # built per review
class Hold:
    """One admitted request as other replicas count it until their state shows its object."""

    uid: str  # metadata.uid the API server assigned (validating admission sees it), the Hold's identity
    kind: str
    name: str
    gpus: Fraction  # what the admission added to the profile, never less than zero
    storage: Fraction  # bytes
    unbounded: bool  # asked for every matching device (only ever admitted in Audit mode)
    replaces: str = ""  # UPDATE: the resourceVersion of the object it changed ("" for a CREATE)
    expires: float = 0.0  # seconds since the epoch; set by the ledger when it records the Hold


@frozen_dataclass(dict_init=True)  # built per review
class HoldScope:
    """Where a Hold goes and what the deciding process counts already."""

    policy: str  # the quota policy's name: each policy keeps its own reservations
    namespace: str  # the profile
    counted: frozenset[str]  # uids this process lays over its state already (its own reservations in flight)
    seconds: float  # how long a Hold lives when its object never shows (reservationSeconds)
    deadline: float  # time.monotonic() by which the admission must be answered


@frozen_dataclass(dict_init=True)  # built per review
class Ruling(Generic[D]):
    """A decision, and the Hold it makes (None: refused, or it adds nothing: nothing to hold)."""

    decision: D
    hold: Hold | None
    record: bool = True  # False for a dry run: judged with the other replicas' Holds, and nothing recorded


class SharedReservations(Protocol):
    """The reservation ledger the replicas share. `hold` returns `first` (the decision without other replicas'
    Holds) when no other replica holds anything unexpired in the scope, else what `judge` rules with those Holds
    (the judge leaves out the Holds whose objects its own count includes); it records the
    ruling's Hold (unless the ruling says not to) before returning, so that a replica that decides later counts it. Raises StateUnavailable
    when it cannot read or record within the scope's deadline: the policy's failure policy then governs."""

    async def hold(self, scope: HoldScope, first: Ruling[D], judge: Callable[[tuple[Hold, ...]], Awaitable[Ruling[D]]]
                   ) -> Ruling[D]: ...

    def withdraw(self, scope: HoldScope, hold: Hold) -> None:
        """The request was refused after all (another policy): this process stops counting the Hold at once and
        drops it from the ledger at its next write; other replicas count it until then, or until it expires."""


class ProcessReservations:
    """Standalone: one process, whose per-profile locks and in-process reservations already make the quota exact."""

    async def hold(self, scope: HoldScope, first: Ruling[D], judge: Callable[[tuple[Hold, ...]], Awaitable[Ruling[D]]]
                   ) -> Ruling[D]:
        return first

    def withdraw(self, scope: HoldScope, hold: Hold) -> None:
        """Nothing was shared: the in-process reservation's own rollback is the whole undo."""
