"""Where rule results go after a verdict: a bounded buffer that never blocks an admission."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Protocol

from webhook.model.results import RuleResult


@dataclass(frozen=True)
class ResourceRef:
    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str


@dataclass(frozen=True)
class ReportEntry:
    resource: ResourceRef
    result: RuleResult
    timestamp: float


class ResultSink(Protocol):
    def submit(self, resource: ResourceRef, results: tuple[RuleResult, ...]) -> None: ...


class MemoryResultSink:
    """Standalone mode: keep the latest results in memory; the oldest go first when full."""

    def __init__(self, capacity: int = 10_000) -> None:
        self.entries: deque[ReportEntry] = deque(maxlen=capacity)

    def submit(self, resource: ResourceRef, results: tuple[RuleResult, ...]) -> None:
        now = time.time()
        self.entries.extend(ReportEntry(resource, r, now) for r in results)
