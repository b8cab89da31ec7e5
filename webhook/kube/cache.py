"""One kind's objects as the informer last saw them, indexed by namespace.

Written by the informer's thread, read by the event loop: every access takes the lock for a few
dictionary operations only, and readers get the stored objects (never mutated: replaced whole), or for a
packed kind (pods, webhook/state/packed.py) a private copy unpacked outside the lock.
"""

from __future__ import annotations

import threading
from typing import Any, Iterable, Mapping

from webhook.state.packed import pack, stored as unpacked

Obj = Mapping[str, Any]


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _slim(obj: Obj) -> Obj:
    """Drop metadata.managedFields (often half of a pod's size, read by no policy) before keeping an object.

    The object was decoded for this cache alone, so it is trimmed in place rather than copied."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        del meta["managedFields"]
    return obj


class ObjectCache:
    def __init__(self, namespaced: bool, packed: bool = False) -> None:
        self.namespaced = namespaced
        self.packed = packed
        self._lock = threading.Lock()
        self._by_namespace: dict[str, dict[str, Obj | bytes]] = {}
        self._removals = 0  # deletions and relists so far (see mark)

    def _where(self, obj: Obj) -> tuple[str, str]:
        meta = _meta(obj)
        return (str(meta.get("namespace", "")) if self.namespaced else ""), str(meta.get("name", ""))

    def _kept(self, obj: Obj) -> Obj | bytes:
        return pack(obj) if self.packed else obj

    def put(self, obj: Obj) -> None:
        obj = _slim(obj)
        namespace, name = self._where(obj)
        kept = self._kept(obj)
        with self._lock:
            self._by_namespace.setdefault(namespace, {})[name] = kept

    def mark(self) -> int:
        """Where the cache's removals stand, taken before reading an object from the API: `put_hint` keeps what
        the read found only if nothing was removed since (the removal may be of that very object)."""
        with self._lock:
            return self._removals

    def put_hint(self, obj: Obj, mark: int) -> bool:
        """An object read from the API, kept until the watch delivers it (which then replaces it); refused when the
        cache holds the name already or removed anything since `mark` (the informer stays the truth)."""
        obj = _slim(obj)
        namespace, name = self._where(obj)
        kept = self._kept(obj)
        with self._lock:
            objects = self._by_namespace.setdefault(namespace, {})
            if name in objects or self._removals != mark:
                return False
            objects[name] = kept
            return True

    def delete(self, obj: Obj) -> None:
        namespace, name = self._where(obj)
        with self._lock:
            self._removals += 1
            objects = self._by_namespace.get(namespace)
            if objects is not None:
                objects.pop(name, None)
                if not objects:
                    del self._by_namespace[namespace]

    def replace(self, objects: Iterable[Obj]) -> None:
        """A relist: the new content, in one swap."""
        fresh: dict[str, dict[str, Obj | bytes]] = {}
        for obj in objects:
            namespace, name = self._where(obj)
            fresh.setdefault(namespace, {})[name] = self._kept(_slim(obj))
        with self._lock:
            self._by_namespace = fresh
            self._removals += 1

    def get(self, namespace: str, name: str) -> Obj | None:
        with self._lock:
            objects = self._by_namespace.get(namespace if self.namespaced else "")
            found = objects.get(name) if objects else None
        return None if found is None else unpacked(found)

    def list(self, namespace: str = "") -> list[Obj]:
        with self._lock:
            if namespace and self.namespaced:
                listed = list(self._by_namespace.get(namespace, {}).values())
            else:
                listed = [obj for objects in self._by_namespace.values() for obj in objects.values()]
        return [unpacked(obj) for obj in listed] if self.packed else listed  # type: ignore[misc]

    def __len__(self) -> int:
        with self._lock:
            return sum(len(objects) for objects in self._by_namespace.values())
