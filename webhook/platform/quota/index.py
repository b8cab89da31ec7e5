"""Per-profile usage (totals.ProfileUsage) for each cluster state, kept up to date through the state's listener.

The state tells us what changed through its listener hook (standalone writes, live informer events,
possibly from other threads): the hook only marks (kind, name) dirty; the event loop re-reads dirty
objects when it next decides for that profile.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Callable, Mapping

from webhook.model.cluster import ClusterState, StateHook
from webhook.platform.quota.objects import COUNTED_KINDS
from webhook.platform.quota.reads import Key
from webhook.platform.quota.settings import CountingRules
from webhook.platform.quota.totals import ProfileUsage


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
        profile.caught_up()
        return profile


class IndexedObjects:
    """What a decision on the usage index counts (the ledger's CountedObjects): the profile's objects as the index
    last re-read them, and the state for what the index does not hold (other namespaces, kinds it does not count)."""

    __slots__ = ("profile", "state")

    def __init__(self, profile: ProfileUsage, state: Any) -> None:
        self.profile, self.state = profile, state

    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        if namespace == self.profile.namespace and kind in COUNTED_KINDS:
            return self.profile.objects[kind].get(name)
        return self.state.get(kind, namespace, name)  # type: ignore[no-any-return]


class UsageIndex:
    """Incremental usage per cluster state (weakly held) for one compiled quota policy's counting rules."""

    def __init__(self, rules: CountingRules) -> None:
        self.rules = rules
        self._states: weakref.WeakKeyDictionary[Any, _StateUsage] = weakref.WeakKeyDictionary()

    def current(self, state: ClusterState, namespace: str) -> ProfileUsage | None:
        """The profile brought up to date when it is counted already (bringing it up to date costs only what
        changed); None when it is not (the caller counts it off the event loop, with `profile`)."""
        usage = self._states.get(state) if _weakable(state) else None
        if usage is None or namespace not in usage.profiles or usage._reset:
            return None
        return usage.profile(state, namespace)

    def profile(self, state: ClusterState, namespace: str) -> ProfileUsage | None:
        """None when the state cannot tell us what changed (then the caller recounts)."""
        usage = self._states.get(state) if _weakable(state) else None
        if usage is None:
            if not _weakable(state):
                return None
            fresh = _StateUsage(self.rules)
            if not state.add_listener(*_weak_listener(fresh)):
                return None
            usage = self._states[state] = fresh
        return usage.profile(state, namespace)


def _weakable(state: Any) -> bool:
    try:
        weakref.ref(state)
    except TypeError:
        return False
    return True


def _weak_listener(usage: _StateUsage) -> tuple[StateHook, Callable[[], bool]]:
    """The state must not keep a replaced policy's index alive: after a reload this listener goes quiet, and the
    state drops it once its index is gone."""
    ref = weakref.ref(usage)

    def listener(kind: str, event: str, obj: Mapping[str, Any] | None) -> None:
        target = ref()
        if target is not None:
            target.changed(kind, event, obj)

    return listener, lambda: ref() is None
