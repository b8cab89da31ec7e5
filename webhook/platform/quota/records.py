"""The records the quota's running totals (totals.py) hand out and keep: the usage a decision reads
(KnownUsage), the charges as they were before a decision laid its changes over (Before), and the one charge
kept for the admitted pod (SpareCharge)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Iterator, Mapping

from webhook.model.quickinit import frozen_dataclass
from webhook.platform.quota.devices import ZERO
from webhook.platform.quota.reads import Key, Read
from webhook.platform.quota.usage import Charge, Usage


@frozen_dataclass(dict_init=True)
class KnownUsage(Usage):
    """A Usage whose totals were kept as objects changed, instead of summed over `charges`."""

    known_gpus: Fraction = ZERO
    known_storage: Fraction = ZERO
    known_unbounded: tuple[Charge, ...] = ()

    @property  # type: ignore[override]
    def gpus(self) -> Fraction:
        return self.known_gpus

    @property  # type: ignore[override]
    def storage(self) -> Fraction:
        return self.known_storage

    @property
    def unbounded(self) -> tuple[Charge, ...]:
        return self.known_unbounded


class SpareCharge:
    """The charge of a pod laid over as the request, kept for when the state records that very pod (standalone:
    the engine stores the admitted request right after the decision, as a new dict sharing the request's
    spec and status). Reused only when it is exactly what pod_charge would say again: the same spec and
    status objects (request.object is never changed, and stored objects are replaced whole, never edited:
    the same object has the same content), the same name, the same uid unless the charge could not depend
    on it (usage.POD_UID_READ_FOR), and every object its reads found still the same one."""

    __slots__ = ("key", "spec", "status", "name", "uid", "uid_blind", "charge", "reads", "seen")

    def __init__(self, key: Key, pod: Mapping[str, Any], charge: Charge, reads: frozenset[Read],
                 seen: tuple[tuple[Read, Any], ...], uid_blind: bool) -> None:
        meta = pod.get("metadata") or {}
        self.key, self.spec, self.status = key, pod.get("spec"), pod.get("status")
        self.name, self.uid, self.uid_blind = meta.get("name"), meta.get("uid"), uid_blind
        self.charge, self.reads, self.seen = charge, reads, seen

    def fits(self, pod: Mapping[str, Any], found: Callable[[Read], Any]) -> bool:
        """Is this charge what pod_charge would say of `pod` now? `found`: what a read finds now."""
        meta = pod.get("metadata")
        if type(meta) is not dict or pod.get("spec") is not self.spec or pod.get("status") is not self.status \
                or meta.get("name") != self.name or (not self.uid_blind and meta.get("uid") != self.uid):
            return False
        for read, then in self.seen:  # a plain loop: a generator in all() costs more than the few reads compared
            if (found(read) != then) if read[0] == "gen" else (found(read) is not then):
                return False
        return True


class Before(Mapping[Key, Charge]):
    """The charges as they were before the request was laid over (read only for denial messages)."""

    def __init__(self, current: Mapping[Key, Charge], journal: Mapping[Key, Charge | None]) -> None:
        self._current, self._journal = current, journal

    def _merged(self) -> dict[Key, Charge]:
        merged = dict(self._current)
        for key, charge in self._journal.items():
            if charge is None:
                merged.pop(key, None)
            else:
                merged[key] = charge
        return merged

    def __getitem__(self, key: Key) -> Charge:
        if key in self._journal:
            charge = self._journal[key]
            if charge is None:
                raise KeyError(key)
            return charge
        return self._current[key]

    def __iter__(self) -> Iterator[Key]:
        return iter(self._merged())

    def __len__(self) -> int:
        return len(self._merged())
