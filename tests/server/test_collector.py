"""The collector keeper: stored objects that arrive after start-up are frozen, garbage cycles are not."""

import asyncio
import gc
import weakref

import pytest

from webhook.server.collector import CollectorKeeper


class Node:
    """A tracked object that can be weakly referenced and can hold a cycle."""

    def __init__(self) -> None:
        self.other: object = None


@pytest.fixture(autouse=True)
def baseline():
    """What the test process holds already is frozen first, as `serve` freezes what start-up loaded;
    yields how many objects that is."""
    gc.collect()
    gc.freeze()
    yield gc.get_freeze_count()
    gc.unfreeze()  # all of it goes back to the collector


def _stored(count: int) -> list[dict]:
    return [{"metadata": {"name": f"p{i}", "labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}]}}
            for i in range(count)]


def test_check_freezes_once_the_oldest_generation_reaches_the_threshold(baseline):
    keeper = CollectorKeeper(synced=lambda: True, threshold=50_000)
    small = _stored(100)
    gc.collect()  # survivors go to the oldest generation, as stored objects do
    assert not keeper.check() and keeper.settles == 0 and gc.get_freeze_count() <= baseline
    stored = _stored(20_000)  # ~100,000 tracked objects
    gc.collect()
    walked, frozen = keeper.walked(), gc.get_freeze_count()
    assert walked >= 50_000
    assert keeper.check() and keeper.settles == 1
    assert gc.get_freeze_count() >= frozen + 50_000 and keeper.walked() < 1_000
    assert not keeper.check()  # nothing new: nothing to do
    del small, stored


def test_garbage_cycles_are_collected_before_freezing_and_frozen_objects_are_still_freed(baseline):
    keeper = CollectorKeeper(synced=lambda: True)
    a, b = Node(), Node()
    a.other, b.other = b, a  # a cycle: only the collector frees it
    cycle = weakref.ref(a)
    kept = Node()
    held = weakref.ref(kept)
    del a, b
    gc.disable()  # no automatic collection may free the cycle first: settle must
    try:
        assert cycle() is not None
        keeper.settle()
        assert cycle() is None  # collected, not frozen
        assert held() is kept and gc.get_freeze_count() > baseline
        del kept  # frozen, and freed by its reference count all the same
        assert held() is None
    finally:
        gc.enable()


async def test_watch_settles_when_the_state_has_synced_then_on_growth(baseline):
    synced = False
    keeper = CollectorKeeper(synced=lambda: synced, threshold=20_000, check_seconds=0.05, sync_poll_seconds=0.02)
    task = asyncio.create_task(keeper.watch())
    try:
        await asyncio.sleep(0.1)
        assert keeper.settles == 0  # the informers have not listed: nothing to freeze yet
        synced = True
        for _ in range(100):
            await asyncio.sleep(0.02)
            if keeper.settles:
                break
        assert keeper.settles == 1 and gc.get_freeze_count() > baseline
        stored = _stored(10_000)
        gc.collect()
        for _ in range(100):
            await asyncio.sleep(0.02)
            if keeper.settles == 2:
                break
        assert keeper.settles == 2 and keeper.walked() < 20_000
        del stored
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
