"""One deadline for a phase behaves as a deadline per policy: only the policy running times out."""

from __future__ import annotations

import asyncio

from webhook.engine.dispatch import each_within


async def test_a_timeout_fails_the_running_item_and_the_later_ones_still_run():
    ran, timed_out = [], []

    async def step(item: str) -> None:
        if item.startswith("slow"):
            await asyncio.sleep(5)
        elif item.startswith("waits"):
            await asyncio.sleep(0)  # any wait after the deadline is cut short
        ran.append(item)

    loop = asyncio.get_running_loop()
    await each_within(loop.time() + 0.05, ["first", "slow", "sync", "waits", "sync-too"], step,
                      lambda item, exc: timed_out.append((item, type(exc).__name__)))
    assert ran == ["first", "sync", "sync-too"]
    assert timed_out == [("slow", "TimeoutError"), ("waits", "TimeoutError")]


async def test_without_a_timeout_every_item_runs_once_in_order():
    ran = []

    async def step(item: int) -> None:
        await asyncio.sleep(0)
        ran.append(item)

    await each_within(asyncio.get_running_loop().time() + 5, list(range(20)), step, lambda *_: ran.append("timeout"))
    assert ran == list(range(20))


async def test_an_error_of_the_step_itself_is_not_a_timeout():
    async def step(item: int) -> None:
        raise TimeoutError("the policy's own")  # e.g. a lookup that gave up: the step's caller handles it

    try:
        await each_within(asyncio.get_running_loop().time() + 5, [1], step, lambda *_: None)
    except TimeoutError as exc:
        assert str(exc) == "the policy's own"
    else:
        raise AssertionError("the step's own error must reach the caller")
