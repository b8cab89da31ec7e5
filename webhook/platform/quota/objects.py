"""One profile's objects as a quota decision sees them.

The cluster state, with in-flight reservations laid over it, and then the request applied (or taken
away): counting the same view with and without the request gives what the request adds, including
effects across objects (a claim generated from a pod's template replaces that template's charge).
Immutable, so the counting can run in a worker thread while the event loop serves other requests.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Protocol

from webhook.model.cluster import POD, PVC, RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE, ClusterState
from webhook.model.quickinit import frozen_dataclass
from webhook.state.ledger import Reservation

COUNTED_KINDS = (POD, PVC, RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE)

Objects = Mapping[str, Mapping[str, Any]]  # name -> object


class ObjectsView(Protocol):
    """What the charge functions (usage.py) read of a profile: a ProfileObjects, or the recording view through
    which the incremental totals note what each charge read (reads.RecordingView)."""

    def of(self, kind: str) -> Objects: ...

    def get(self, kind: str, name: str) -> Mapping[str, Any] | None: ...


def container_sections(spec: Any) -> list[dict[str, Any]] | None:
    """The `limits` and `requests` maps of a pod spec's init and app containers, for the quota's one-pass
    shortcuts; None when any level on the way is not a plain dict or list as the API server sends it (then
    the caller takes its general path, which reads every shape)."""
    if type(spec) is not dict:
        return None
    sections = []
    for field in ("initContainers", "containers"):
        containers = spec.get(field)
        if containers is None:
            continue
        if type(containers) is not list:
            return None
        for container in containers:
            if type(container) is not dict:
                return None
            resources = container.get("resources")
            if resources is None:
                continue
            if type(resources) is not dict:
                return None
            for section in ("limits", "requests"):
                values = resources.get(section)
                if values is None:
                    continue
                if type(values) is not dict:
                    return None
                sections.append(values)
    return sections


def object_name(obj: Mapping[str, Any], fallback: str = "") -> str:
    meta = obj.get("metadata") or {}
    return str(meta.get("name") or fallback)


@frozen_dataclass
class ProfileObjects:
    namespace: str
    by_kind: Mapping[str, Objects]
    reserved: frozenset[tuple[str, str]] = frozenset()  # (kind, name) still in flight, for messages

    @classmethod
    def read(cls, state: ClusterState, namespace: str, reservations: Iterable[Reservation] = ()) -> "ProfileObjects":
        """Reads the state on the calling thread (the event loop): the state need not be thread-safe."""
        by_kind: dict[str, dict[str, Mapping[str, Any]]] = {
            kind: {object_name(obj): obj for obj in state.list(kind, namespace)} for kind in COUNTED_KINDS}
        reserved = set()
        for reservation in reservations:
            key = reservation.key
            if key.kind in by_kind and key.namespace == namespace:
                by_kind[key.kind][key.name] = reservation.object
                reserved.add((key.kind, key.name))
        return cls(namespace, MappingProxyType({k: MappingProxyType(v) for k, v in by_kind.items()}), frozenset(reserved))

    def of(self, kind: str) -> Objects:
        return self.by_kind.get(kind, MappingProxyType({}))

    def get(self, kind: str, name: str) -> Mapping[str, Any] | None:
        return self.of(kind).get(name)

    def _age(self, kind: str, name: str, obj: Mapping[str, Any]) -> tuple[bool, str, str, str]:
        """Creation order: in-flight reservations are the newest; then creationTimestamp (RFC 3339 sorts as
        text; objects seeded without one count as oldest), then kind and name so that the order is total."""
        stamp = str((obj.get("metadata") or {}).get("creationTimestamp") or "")
        return ((kind, name) in self.reserved, stamp, kind, name)

    def created_before(self, kind: str, name: str) -> "ProfileObjects":
        """Only the objects created before (kind, name), which must be in this view."""
        subject = self.get(kind, name)
        assert subject is not None, f"{kind} {name} is not in the view"
        mine = self._age(kind, name, subject)
        by_kind = {k: MappingProxyType({n: o for n, o in objects.items() if self._age(k, n, o) < mine})
                   for k, objects in self.by_kind.items()}
        return replace(self, by_kind=MappingProxyType(by_kind))

    def with_object(self, kind: str, name: str, obj: Mapping[str, Any] | None) -> "ProfileObjects":
        """A copy with `obj` at (kind, name), or without that key when obj is None."""
        objects = dict(self.of(kind))
        if obj is None:
            objects.pop(name, None)
        else:
            objects[name] = obj
        by_kind = dict(self.by_kind)
        by_kind[kind] = MappingProxyType(objects)
        return replace(self, by_kind=MappingProxyType(by_kind), reserved=self.reserved - {(kind, name)})
