"""Where rule results go after a verdict: a bounded buffer that never blocks an admission."""

from __future__ import annotations

import time
from collections import deque
from typing import Protocol

from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import RuleResult


@frozen_dataclass(dict_init=True)
class ResourceRef:
    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str


@frozen_dataclass
class ReportEntry:
    resource: ResourceRef
    result: RuleResult
    timestamp: float


class ResultSink(Protocol):
    def submit(self, resource: ResourceRef, results: tuple[RuleResult, ...]) -> None: ...


class MemoryResultSink:
    """Standalone mode: keep the latest `capacity` results in memory; the oldest go first when full.

    Held as submitted, one batch per admission, and made entries only when read: an admission through a
    score of policies would otherwise build a score of entries on the request path that only a report
    command may ever read."""

    def __init__(self, capacity: int = 10_000) -> None:
        self.capacity = capacity
        self._batches: deque[tuple[ResourceRef, tuple[RuleResult, ...], float]] = deque()
        self._held = 0  # results in _batches

    def submit(self, resource: ResourceRef, results: tuple[RuleResult, ...]) -> None:
        if not results:
            return
        self._batches.append((resource, results, time.time()))
        self._held += len(results)
        # whole batches that the newest `capacity` results no longer reach; `entries` cuts into the oldest one
        while self._batches and self._held - len(self._batches[0][1]) >= self.capacity:
            self._held -= len(self._batches.popleft()[1])

    @property
    def entries(self) -> list[ReportEntry]:
        """The latest `capacity` results, oldest first."""
        flat = [ReportEntry(resource, r, stamp) for resource, results, stamp in self._batches for r in results]
        return flat[max(0, len(flat) - self.capacity):]
