"""Per-profile usage totals kept incrementally: a quota decision costs O(what changed), not O(profile).

`usage.py`'s per-object charge functions (`pod_charge`, `claim_charge`, `pvc_charge`) stay the one
definition of what an object costs; this module only remembers their answers. A charge may read other
objects of the profile (a pod reads its claim templates, generated claims and ephemeral PVCs; a claim
reads its owner pod), so each charge is computed through a recording view that notes every object
(or whole kind) it looked at. When an object changes, exactly the charges that read it are recomputed,
and the totals move by the difference: Fractions are exact, so the totals always equal a recount
(`tests/platform/quota/test_totals.py` checks that against `measure()` on random histories). A rule
change in the charge functions flows in unchanged: whatever they read is recorded.

The state tells us what changed through its listener hook (standalone writes, live informer events,
possibly from other threads): the hook only marks (kind, name) dirty; the event loop re-reads dirty
objects when it next decides for that profile. A decision lays the in-flight reservations and the
request over the totals, decides, and takes them off again, all without awaiting.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Iterator, Mapping

from webhook.model.cluster import POD, PVC, RESOURCE_CLAIM
from webhook.platform.quota.devices import ZERO
from webhook.platform.quota.objects import COUNTED_KINDS, object_name
from webhook.platform.quota.settings import CountingRules
from webhook.platform.quota.usage import Charge, Usage, claim_charge, generated_key, pod_charge, pvc_charge

Key = tuple[str, str]  # (kind, name)
Read = tuple[str, str, Any]  # ("obj", kind, name) | ("gen", pod, pod claim) | ("kind", kind, None)
CHARGED = frozenset({POD, RESOURCE_CLAIM, PVC})


@dataclass(frozen=True)
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


class _Recording(Mapping[Any, Any]):
    """One kind's objects (or the generated-claims index) that notes each key a charge function reads."""

    def __init__(self, data: Mapping[Any, Any], reads: set[Read], tag: str, kind: str = "") -> None:
        self._data, self._reads, self._tag, self._kind = data, reads, tag, kind

    def _note(self, key: Any) -> None:
        self._reads.add(("obj", self._kind, key) if self._tag == "obj" else ("gen", key[0], key[1]))

    def __getitem__(self, key: Any) -> Any:
        self._note(key)
        return self._data[key]

    def get(self, key: Any, default: Any = None) -> Any:
        self._note(key)
        return self._data.get(key, default)

    def __contains__(self, key: object) -> bool:
        self._note(key)
        return key in self._data

    def __iter__(self) -> Iterator[Any]:
        self._reads.add(("kind", self._kind, None))  # a scan: any change of this kind may change the answer
        return iter(list(self._data))

    def __len__(self) -> int:
        self._reads.add(("kind", self._kind, None))
        return len(self._data)


class _View:
    """What the charge functions see as `objects` (ProfileObjects' reading side), recording every read."""

    def __init__(self, profile: "ProfileUsage") -> None:
        self.profile = profile
        self.reads: set[Read] = set()

    def of(self, kind: str) -> Mapping[str, Mapping[str, Any]]:
        return _Recording(self.profile.objects.get(kind, {}), self.reads, "obj", kind)

    def get(self, kind: str, name: str) -> Mapping[str, Any] | None:
        self.reads.add(("obj", kind, name))
        return self.profile.objects.get(kind, {}).get(name)

    def generated(self) -> Mapping[tuple[str, str], list[Mapping[str, Any]]]:
        return _Recording(self.profile.generated, self.reads, "gen")


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
        self._forget(key)
        kind, name = key
        obj = self.objects[kind].get(name)
        if obj is None:
            return
        view = _View(self)
        if kind == POD:
            charge = pod_charge(view, name, obj, self.rules, view.generated())  # type: ignore[arg-type]
        elif kind == RESOURCE_CLAIM:
            charge = claim_charge(view, name, obj, self.rules)  # type: ignore[arg-type]
        else:
            charge = pvc_charge(name, obj, self.rules)
        self._account(key, charge, frozenset(view.reads))

    def _restore(self, key: Key, charge: Charge | None, reads: frozenset[Read] | None) -> None:
        """Put back a charge computed earlier from the objects as they are again (undo, no recount)."""
        self._forget(key)
        if charge is None:
            return
        self._account(key, charge, reads or frozenset())

    def _account(self, key: Key, charge: Charge, reads: frozenset[Read]) -> None:
        self.charges[key] = charge
        # Fraction arithmetic is slow in Python: adding (or taking away) zero, the usual case, is skipped
        if charge.gpus:
            self.gpus += charge.gpus
        if charge.storage:
            self.storage += charge.storage
        if charge.unbounded:
            self.unbounded[key] = charge
        self._reads[key] = reads
        for read in reads:
            self._readers.setdefault(read, set()).add(key)

    def _forget(self, key: Key) -> None:
        charge = self.charges.pop(key, None)
        if charge is not None:
            if charge.gpus:
                self.gpus -= charge.gpus
            if charge.storage:
                self.storage -= charge.storage
            self.unbounded.pop(key, None)
        for read in self._reads.pop(key, ()):
            readers = self._readers.get(read)
            if readers is not None:
                readers.discard(key)
                if not readers:
                    del self._readers[read]

    def laid_over(self, changes: list[tuple[str, str, Mapping[str, Any] | None]],
                  journal: dict[Key, Charge | None] | None = None) -> "_Overlay":
        """Apply `changes` (reservations, the request) for the duration of a decision, then undo them:
        the objects go back, and so do the charges they had (restored, not recomputed)."""
        return _Overlay(self, changes, journal)


class _Overlay:
    """ProfileUsage.laid_over as a plain context manager (a generator-based one costs more than a small put)."""

    __slots__ = ("profile", "changes", "journal", "objects", "charges")

    def __init__(self, profile: ProfileUsage, changes: list[tuple[str, str, Mapping[str, Any] | None]],
                 journal: dict[Key, Charge | None] | None) -> None:
        self.profile, self.changes, self.journal = profile, changes, journal
        self.objects: list[tuple[str, str, Mapping[str, Any] | None]] = []
        self.charges: list[tuple[Key, Charge | None, frozenset[Read] | None]] = []

    def __enter__(self) -> None:
        profile = self.profile
        try:
            for kind, name, obj in self.changes:
                self.objects.append((kind, name, profile.objects.get(kind, {}).get(name)))
                profile.put(kind, name, obj, self.journal, self.charges)
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
            profile._restore(key, charge, reads)


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


class _StateUsage:
    """The profiles of one cluster state, and the objects its listener reported changed since."""

    def __init__(self, rules: CountingRules) -> None:
        self.rules = rules
        self.profiles: dict[str, ProfileUsage] = {}
        self._dirty: dict[str, set[Key]] = {}
        self._reset = False
        self._lock = threading.Lock()

    def changed(self, kind: str, event: str, obj: Mapping[str, Any] | None) -> None:
        """The state's listener (any thread): note what to re-read, nothing more."""
        with self._lock:
            if event == "RELIST" or obj is None:
                self._reset = True
                return
            if kind not in COUNTED_KINDS:
                return
            meta = obj.get("metadata") or {}
            dirty = self._dirty.get(str(meta.get("namespace", "")))
            if dirty is not None:  # profiles not loaded yet read everything when they are
                dirty.add((kind, str(meta.get("name", ""))))

    def profile(self, state: Any, namespace: str) -> ProfileUsage:
        """The profile's usage, brought up to date with the state (on the event loop)."""
        with self._lock:
            if self._reset:
                self._reset, self.profiles = False, {}
                self._dirty = {}
            dirty = self._dirty.get(namespace)
            if dirty is None:
                self._dirty[namespace] = set()  # from now on, changes are noted (also during the load below)
            else:
                self._dirty[namespace] = set()
        profile = self.profiles.get(namespace)
        if profile is None or dirty is None:
            profile = self.profiles[namespace] = ProfileUsage(namespace, self.rules)
            profile.load({kind: state.list(kind, namespace) for kind in COUNTED_KINDS})
            return profile
        for kind, name in dirty:
            profile.put(kind, name, state.get(kind, namespace, name))
        return profile


class UsageIndex:
    """Incremental usage per cluster state (weakly held) for one compiled quota policy's counting rules."""

    def __init__(self, rules: CountingRules) -> None:
        self.rules = rules
        self._states: weakref.WeakKeyDictionary[Any, _StateUsage] = weakref.WeakKeyDictionary()

    def loaded(self, state: Any, namespace: str) -> bool:
        """Is this profile counted already (then bringing it up to date costs only what changed)?"""
        usage = self._states.get(state) if _weakable(state) else None
        return usage is not None and namespace in usage.profiles and not usage._reset

    def profile(self, state: Any, namespace: str) -> ProfileUsage | None:
        """None when the state cannot tell us what changed (then the caller recounts)."""
        usage = self._states.get(state) if _weakable(state) else None
        if usage is None:
            subscribe: Callable[[Callable[..., None]], None] | None = getattr(state, "add_listener", None)
            if subscribe is None or not _weakable(state):
                return None
            usage = self._states[state] = _StateUsage(self.rules)
            subscribe(_weak_listener(usage))
        return usage.profile(state, namespace)


def _weakable(state: Any) -> bool:
    try:
        weakref.ref(state)
    except TypeError:
        return False
    return True


def _weak_listener(usage: _StateUsage) -> Callable[[str, str, Mapping[str, Any] | None], None]:
    """The state must not keep a replaced policy's index alive: after a reload this listener goes quiet."""
    ref = weakref.ref(usage)

    def listener(kind: str, event: str, obj: Mapping[str, Any] | None) -> None:
        target = ref()
        if target is not None:
            target.changed(kind, event, obj)

    listener.expired = lambda: ref() is None  # type: ignore[attr-defined]  # states prune expired listeners
    return listener
