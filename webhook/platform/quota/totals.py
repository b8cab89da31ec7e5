"""Per-profile usage totals kept incrementally: a quota decision costs O(what changed), not O(profile).

`usage.py`'s per-object charge functions (`pod_charge`, `claim_charge`, `pvc_charge`) stay the one
definition of what an object costs; this module only remembers their answers. A charge may read other
objects of the profile (a pod reads its claim templates, generated claims and ephemeral PVCs; a claim
reads its owner pod), so each charge is computed through a recording view that notes every object
(or whole kind) it looked at. When an object changes, exactly the charges that read it are recomputed,
and the totals move by the difference: Fractions are exact, so the totals always equal a recount
(`tests/platform/quota/test_totals.py` checks that against `measure()` on random histories). A rule
change in the charge functions flows in unchanged: whatever they read is recorded.

One charge is reused instead of computed again: the request's pod, laid over the totals for the decision,
keeps its charge (records.SpareCharge) for when the standalone state records that very pod right after admitting it,
so the admitted pod is not charged twice (live mode: the informer delivers another object, charged as
usual). That rests on what pod_charge reads of the pod itself: its spec, status, name and uid
(usage.POD_UID_READ_FOR says when the uid matters).

What changed reaches a profile through index.py (the state's listener). A decision lays the in-flight
reservations and the request over the totals, decides, and takes them off again, all without awaiting;
the usual one, a pod created with nothing in flight that no other charge reads, is decided from its own
charge alone (`ProfileUsage.project_pod`, the same answer as laying it over). The recording views the
charges are computed through are in reads.py.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Mapping

from webhook.model.cluster import POD, PVC, RESOURCE_CLAIM
from webhook.platform.quota.devices import ZERO
from webhook.platform.quota.objects import COUNTED_KINDS, object_name
from webhook.platform.quota.reads import NOTHING, GeneratedReads, Key, Read, RecordingView
from webhook.platform.quota.records import Before, KnownUsage, SpareCharge
from webhook.platform.quota.settings import CountingRules
from webhook.platform.quota.usage import POD_UID_READ_FOR, Charge, claim_charge, generated_key, pod_charge, pvc_charge

CHARGED = frozenset({POD, RESOURCE_CLAIM, PVC})


def _plus(total: Fraction, amount: Fraction) -> Fraction:
    """total + amount, without Fraction arithmetic (slow in Python) when the total is zero."""
    return total + amount if total else amount


def _minus(total: Fraction, amount: Fraction) -> Fraction:
    """total - amount, without Fraction arithmetic when the amount is all of the total (the same object, as
    _plus leaves it for the only charge)."""
    return ZERO if total is amount else total - amount


def _same_cost(old: Charge, new: Charge) -> bool:
    return (old.unbounded == new.unbounded and (old.gpus is new.gpus or old.gpus == new.gpus)
            and (old.storage is new.storage or old.storage == new.storage))


class ProfileUsage:
    """One profile's objects, their charges, what each charge read, and the running totals."""

    def __init__(self, namespace: str, rules: CountingRules) -> None:
        self.namespace, self.rules = namespace, rules
        self.objects: dict[str, dict[str, Mapping[str, Any]]] = {kind: {} for kind in COUNTED_KINDS}
        self.generated: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        self.charges: dict[Key, Charge] = {}
        self.gpus = self.storage = ZERO
        self.unbounded: dict[Key, Charge] = {}
        self._reads: dict[Key, frozenset[Read]] = {}
        self._readers: dict[Read, set[Key]] = {}
        self._spare: SpareCharge | None = None  # lives until the profile next catches up with the state

    def load(self, objects: Mapping[str, list[Mapping[str, Any]]]) -> None:
        for kind, items in objects.items():
            for obj in items:
                self._place(kind, object_name(obj), obj)
        for kind in CHARGED:
            for name in list(self.objects[kind]):
                self._recharge((kind, name))

    def put(self, kind: str, name: str, obj: Mapping[str, Any] | None, journal: dict[Key, Charge | None] | None = None,
            undo: list[tuple[Key, Charge | None, frozenset[Read] | None]] | None = None) -> None:
        """Replace (or remove, obj None) one object and recompute the charges that read it.

        `journal` gets each recomputed charge as it was first; `undo` every (key, charge, reads) replaced."""
        touched = self._place(kind, name, obj)
        if touched is None:
            return
        affected = {(kind, name)} if kind in CHARGED else set()
        for read in touched:
            affected.update(self._readers.get(read, ()))
        for key in affected:
            if journal is not None and key not in journal:
                journal[key] = self.charges.get(key)
            if undo is not None:
                undo.append((key, self.charges.get(key), self._reads.get(key)))
            self._recharge(key)

    def caught_up(self) -> None:
        """The profile has re-read what the state reported changed: a spare charge not used by now
        (live mode: the admitted pod arrives later, as another object) is dropped."""
        self._spare = None

    def usage(self) -> KnownUsage:
        return KnownUsage(self.charges, self.gpus, self.storage, tuple(self.unbounded.values()))

    # --- internals ---------------------------------------------------------------------------------
    def _place(self, kind: str, name: str, obj: Mapping[str, Any] | None) -> set[Read] | None:
        objects = self.objects.setdefault(kind, {})
        old = objects.get(name)
        if old is obj:
            return None
        if obj is None:
            del objects[name]
        else:
            objects[name] = obj
        touched: set[Read] = {("obj", kind, name), ("kind", kind, None)}
        if kind == RESOURCE_CLAIM:
            touched |= self._regenerate(old, obj)
        return touched

    def _regenerate(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> set[Read]:
        touched: set[Read] = set()
        old_key, new_key = generated_key(old) if old else None, generated_key(new) if new else None
        if old_key is not None:
            claims = [c for c in self.generated.get(old_key, []) if c is not old]
            if claims:
                self.generated[old_key] = claims
            else:
                self.generated.pop(old_key, None)
            touched.add(("gen", *old_key))
        if new_key is not None and new is not None:
            self.generated.setdefault(new_key, []).append(new)
            touched.add(("gen", *new_key))
        return touched

    def _recharge(self, key: Key) -> None:
        kind, name = key
        obj = self.objects[kind].get(name)
        if obj is None:
            self._forget(key)
            return
        self._settle(key, *self._compute(key, obj))

    def _compute(self, key: Key, obj: Mapping[str, Any]) -> tuple[Charge, frozenset[Read]]:
        """The charge of `obj` at `key` as the objects stand, and what it read (a fitting spare: its own)."""
        spare = self._spare
        if spare is not None and spare.key == key:
            self._spare = None  # one use: the pod it stood for is placed now, or something else is
            if spare.fits(obj, self._found):
                return spare.charge, spare.reads
        kind, name = key
        view = RecordingView(self.objects)
        if kind == POD:
            generated = GeneratedReads(self.generated, view.reads)
            charge = pod_charge(view, name, obj, self.rules, generated)
        elif kind == RESOURCE_CLAIM:
            charge = claim_charge(view, name, obj, self.rules)
        else:
            charge = pvc_charge(name, obj, self.rules)
        return charge, frozenset(view.reads)

    def _settle(self, key: Key, charge: Charge, reads: frozenset[Read]) -> None:
        """Account a recomputed charge. One that costs what the old one did and read the same objects (a pod
        stored again after its admission, a status update) leaves the totals and the readers as they are."""
        old = self.charges.get(key)
        if old is not None and _same_cost(old, charge) and self._reads.get(key) == reads:
            self.charges[key] = charge  # its notes may differ: the charge is the new one all the same
            if charge.unbounded:
                self.unbounded[key] = charge
            return
        self._forget(key)
        self._account(key, charge, reads)

    def _found(self, read: Read) -> Any:
        """What a read finds now: the object (or None), or the generated claims as a tuple."""
        tag, first, second = read
        if tag == "obj":
            return self.objects.get(first, NOTHING).get(second)
        return tuple(self.generated.get((first, second), ()))

    def _keep_spare(self, key: Key) -> None:
        """Remember the charge of the pod at `key` as it stands (laid over as the request), for _recharge."""
        self._keep(key, self.objects[POD].get(key[1]), self.charges.get(key), self._reads.get(key))

    def _keep(self, key: Key, obj: Mapping[str, Any] | None, charge: Charge | None,
              reads: frozenset[Read] | None) -> None:
        self._spare = None
        if obj is None or charge is None or reads is None:
            return
        seen = []
        uid_blind = True
        for read in reads:
            if read[0] == "kind":
                return  # it scanned a kind: what it found is not a few objects to compare
            found = self._found(read)
            if (found if read[0] == "gen" else found is not None and read[1] in POD_UID_READ_FOR):
                uid_blind = False  # generated claims are claims: their owner is checked by uid too
            seen.append((read, found))
        self._spare = SpareCharge(key, obj, charge, reads, tuple(seen), uid_blind)

    def _restore(self, key: Key, charge: Charge | None, reads: frozenset[Read] | None, totals: bool = True) -> None:
        """Put back a charge computed earlier from the objects as they are again (undo, no recount).
        `totals` False: the caller puts the totals back itself (as they were before what is undone)."""
        self._forget(key, totals)
        if charge is None:
            return
        self._account(key, charge, reads or frozenset(), totals)

    def _account(self, key: Key, charge: Charge, reads: frozenset[Read], totals: bool = True) -> None:
        self.charges[key] = charge
        # Fraction arithmetic is slow in Python: adding (or taking away) zero, the usual case, is skipped
        if totals:
            if charge.gpus:
                self.gpus = _plus(self.gpus, charge.gpus)
            if charge.storage:
                self.storage = _plus(self.storage, charge.storage)
        if charge.unbounded:
            self.unbounded[key] = charge
        self._reads[key] = reads
        readers = self._readers
        for read in reads:
            keys = readers.get(read)
            if keys is None:
                readers[read] = {key}
            else:
                keys.add(key)

    def _forget(self, key: Key, totals: bool = True) -> None:
        charge = self.charges.pop(key, None)
        if charge is not None:
            if totals:
                if charge.gpus:
                    self.gpus = _minus(self.gpus, charge.gpus)
                if charge.storage:
                    self.storage = _minus(self.storage, charge.storage)
            if charge.unbounded:
                self.unbounded.pop(key, None)
        reads = self._reads.pop(key, None)
        if reads:
            readers = self._readers
            for read in reads:
                keys = readers.get(read)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del readers[read]

    def project_pod(self, name: str, pod: Mapping[str, Any]) -> tuple[KnownUsage, KnownUsage] | None:
        """(without, with): the usage without the pod at `name`, and with `pod` there, as `laid_over([(POD, name,
        None)])` then `laid_over([(POD, name, pod)], journal, spare=True)` give them (a CREATE decided without
        reservations in flight), without changing anything but the kept charge, as those leave it.

        The shortcut of the usual decision: when no charge read that pod, or scanned the pods, a pod at `name`
        costs its own charge and nothing else, so the totals move by that charge alone, and the charges are the
        profile's with that one key changed. None otherwise (the caller lays the changes over)."""
        key = (POD, name)
        readers = self._readers
        if readers.get(("obj", POD, name)) or readers.get(("kind", POD, None)):
            return None
        pods = self.objects[POD]
        stored = pods.get(name)
        old = self.charges.get(key)
        if (stored is None) is not (old is None):
            return None  # an object without a charge (or a charge without its object) is not this shortcut's case
        pods[name] = pod  # as laid over: the charge (or a kept one's check) sees the pod at its name
        try:
            charge, reads = self._compute(key, pod)
            self._keep(key, pod, charge, reads)
        finally:
            if stored is None:
                del pods[name]
            else:
                pods[name] = stored
        gpus, storage, unbounded = self.gpus, self.storage, tuple(self.unbounded.values())
        if old is not None:
            gpus = _minus(gpus, old.gpus) if old.gpus else gpus
            storage = _minus(storage, old.storage) if old.storage else storage
            if old.unbounded:
                unbounded = tuple(c for k, c in self.unbounded.items() if k != key)
        without = KnownUsage(Before(self.charges, {key: None}), gpus, storage, unbounded)
        return without, KnownUsage(Before(self.charges, {key: charge}),
                                   _plus(gpus, charge.gpus) if charge.gpus else gpus,
                                   _plus(storage, charge.storage) if charge.storage else storage,
                                   unbounded + (charge,) if charge.unbounded else unbounded)

    def laid_over(self, changes: list[tuple[str, str, Mapping[str, Any] | None]],
                  journal: dict[Key, Charge | None] | None = None, spare: bool = False) -> "_Overlay":
        """Apply `changes` (reservations, the request) for the duration of a decision, then undo them:
        the objects go back, and so do the charges they had (restored, not recomputed) and the totals.
        `spare`: the changes are the request; the charge of a pod among them is kept for when the state
        records that very pod (the standalone engine does, right after admitting it)."""
        return _Overlay(self, changes, journal, spare)


class _Overlay:
    """ProfileUsage.laid_over as a plain context manager (a generator-based one costs more than a small put)."""

    __slots__ = ("profile", "changes", "journal", "spare", "objects", "charges", "totals")

    def __init__(self, profile: ProfileUsage, changes: list[tuple[str, str, Mapping[str, Any] | None]],
                 journal: dict[Key, Charge | None] | None, spare: bool = False) -> None:
        self.profile, self.changes, self.journal, self.spare = profile, changes, journal, spare
        self.objects: list[tuple[str, str, Mapping[str, Any] | None]] = []
        self.charges: list[tuple[Key, Charge | None, frozenset[Read] | None]] = []

    def __enter__(self) -> None:
        profile = self.profile
        self.totals = (profile.gpus, profile.storage)
        try:
            for kind, name, obj in self.changes:
                self.objects.append((kind, name, profile.objects.get(kind, {}).get(name)))
                profile.put(kind, name, obj, self.journal, self.charges)
            if self.spare:
                for kind, name, obj in self.changes:
                    if kind == POD and obj is not None:
                        profile._keep_spare((kind, name))
        except BaseException:
            self._undo()  # what was laid over so far goes back, as the finally of the generator did
            raise

    def __exit__(self, *exc: object) -> None:
        self._undo()

    def _undo(self) -> None:
        profile = self.profile
        for kind, name, obj in reversed(self.objects):
            profile._place(kind, name, obj)
        for key, charge, reads in reversed(self.charges):
            profile._restore(key, charge, reads, totals=False)
        # Fractions are exact: the totals with every charge put back are the totals from before, as they were
        profile.gpus, profile.storage = self.totals
