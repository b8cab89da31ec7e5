"""The recording views through which totals.py computes charges: every object (or whole kind) a charge
function looks at is noted, so that exactly the charges that read an object are recomputed when it changes."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Iterator, Mapping

from webhook.model.cluster import RESOURCE_CLAIM

Key = tuple[str, str]  # (kind, name)
Read = tuple[str, str, Any]  # ("obj", kind, name) | ("gen", pod, pod claim) | ("kind", kind, None)
NOTHING: Mapping[Any, Any] = MappingProxyType({})


class ObjectReads(Mapping[str, Mapping[str, Any]]):
    """One kind's objects, noting each name a charge function reads (or the whole kind, for a scan)."""

    __slots__ = ("_data", "_reads", "_kind")

    def __init__(self, data: Mapping[str, Mapping[str, Any]], reads: set[Read], kind: str) -> None:
        self._data, self._reads, self._kind = data, reads, kind

    def __getitem__(self, key: str) -> Mapping[str, Any]:
        self._reads.add(("obj", self._kind, key))
        return self._data[key]

    def get(self, key: str, default: Any = None) -> Any:
        self._reads.add(("obj", self._kind, key))
        return self._data.get(key, default)

    def __contains__(self, key: object) -> bool:
        self._reads.add(("obj", self._kind, key))
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        self._reads.add(("kind", self._kind, None))  # a scan: any change of this kind may change the answer
        return iter(list(self._data))

    def __len__(self) -> int:
        self._reads.add(("kind", self._kind, None))
        return len(self._data)


class GeneratedReads(Mapping[Key, list[Mapping[str, Any]]]):
    """The generated-claims index, noting each (pod, pod claim) a charge function looks up."""

    __slots__ = ("_data", "_reads")

    def __init__(self, data: Mapping[Key, list[Mapping[str, Any]]], reads: set[Read]) -> None:
        self._data, self._reads = data, reads

    def __getitem__(self, key: Key) -> list[Mapping[str, Any]]:
        self._reads.add(("gen", key[0], key[1]))
        return self._data[key]

    def get(self, key: Key, default: Any = None) -> Any:
        self._reads.add(("gen", key[0], key[1]))
        return self._data.get(key, default)

    def __contains__(self, key: object) -> bool:
        self._reads.add(("gen", key[0], key[1]))  # type: ignore[index]
        return key in self._data

    def __iter__(self) -> Iterator[Key]:
        self._reads.add(("kind", RESOURCE_CLAIM, None))  # the index is made of claims
        return iter(list(self._data))

    def __len__(self) -> int:
        self._reads.add(("kind", RESOURCE_CLAIM, None))
        return len(self._data)


class RecordingView:
    """What the charge functions see as `objects` (ProfileObjects' reading side), recording every read."""

    __slots__ = ("objects", "reads")

    def __init__(self, objects: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> None:
        self.objects = objects
        self.reads: set[Read] = set()

    def of(self, kind: str) -> Mapping[str, Mapping[str, Any]]:
        return ObjectReads(self.objects.get(kind, NOTHING), self.reads, kind)

    def get(self, kind: str, name: str) -> Mapping[str, Any] | None:
        self.reads.add(("obj", kind, name))
        return self.objects.get(kind, NOTHING).get(name)
