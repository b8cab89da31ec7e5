"""Keeping stored objects out of the cyclic garbage collector's full walks.

Stored objects (the --state seed, the informers' caches, admitted pods) live long and hold no reference
cycles, yet CPython's full collection walks every one of them: with a large state one full collection stops
the server for a long pause, and one comes whenever the objects that survived since the last one reach a
quarter of those it walked (`python load-tests/bench_gc.py` measures it).

`serve` freezes (gc.freeze) what start-up loaded. Objects arriving later, the live informers' first list
above all, are frozen by this keeper: once the state has synced, and again whenever the objects the
collector still walks reach `threshold`. Each time a full collection comes first,
over what is not frozen yet (so its pause is bounded by `threshold`), so no garbage cycle gets frozen.
Frozen objects are still freed when their last reference goes (reference counting); only cycles among
them would stay, and JSON objects have none.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from dataclasses import dataclass
from typing import Callable

log = logging.getLogger(__name__)

THRESHOLD = 25_000  # tracked objects (~1,000 stored pods): a full collection over them is a short pause


@dataclass
class CollectorKeeper:
    synced: Callable[[], bool]  # the cluster state has its content (live: informers listed)
    threshold: int = THRESHOLD
    check_seconds: float = 10.0
    sync_poll_seconds: float = 0.5
    settles: int = 0  # how many times it collected and froze

    def walked(self) -> int:
        """Objects a full collection would walk: every tracked object not frozen. (Not only the oldest
        generation: objects that replace others, as watch events do, leave the counts that trigger
        collections unchanged and can stay young indefinitely.)"""
        return len(gc.get_objects())

    def settle(self) -> float:
        """Collect, then freeze what survived; returns the seconds it took."""
        started = time.perf_counter()
        gc.collect()
        gc.freeze()
        self.settles += 1
        return time.perf_counter() - started

    def check(self) -> bool:
        """Settle if what a full collection walks grew to the threshold; whether it did."""
        if self.walked() < self.threshold:
            return False
        seconds = self.settle()
        log.info("froze long-lived objects (%.0f ms)", seconds * 1e3, extra={"frozen": gc.get_freeze_count()})
        return True

    async def watch(self) -> None:
        while not self.synced():
            await asyncio.sleep(self.sync_poll_seconds)
        seconds = self.settle()
        log.info("cluster state synced: froze its objects (%.0f ms)", seconds * 1e3,
                 extra={"frozen": gc.get_freeze_count()})
        while True:
            await asyncio.sleep(self.check_seconds)
            try:
                self.check()
            except Exception:  # never expected; without the keeper, the collector only walks more
                log.exception("collector keeper check failed; retrying")
