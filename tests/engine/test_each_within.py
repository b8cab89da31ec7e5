"""One deadline for a phase behaves as a deadline per policy: only the policy running times out."""

from __future__ import annotations

import asyncio

import pytest

from webhook.engine import dispatch


@pytest.fixture(params=["stepped", "awaited"])
def each_within(request, monkeypatch):
    """Both routes, the hand-stepped one and the plain reference (QUARTERMASTER_STEPPED_POLICIES=0), behave alike."""
    monkeypatch.setattr(dispatch, "STEPPED", request.param == "stepped")
    return dispatch.each_within


async def test_a_timeout_fails_the_running_item_and_the_later_ones_still_run(each_within):
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


async def test_without_a_timeout_every_item_runs_once_in_order(each_within):
    ran = []

    async def step(item: int) -> None:
        await asyncio.sleep(0)
        ran.append(item)

    await each_within(asyncio.get_running_loop().time() + 5, list(range(20)), step, lambda *_: ran.append("timeout"))
    assert ran == list(range(20))


async def test_an_error_of_the_step_itself_is_not_a_timeout(each_within):
    async def step(item: int) -> None:
        raise TimeoutError("the policy's own")  # e.g. a lookup that gave up: the step's caller handles it

    try:
        await each_within(asyncio.get_running_loop().time() + 5, [1], step, lambda *_: None)
    except TimeoutError as exc:
        assert str(exc) == "the policy's own"
    else:
        raise AssertionError("the step's own error must reach the caller")


async def test_a_step_that_waits_gets_what_it_waited_for_and_its_own_errors(each_within):
    got = []

    async def step(item: int) -> None:
        future = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_later(0.01, future.set_result, item * 10)
        got.append(await future)
        await asyncio.sleep(0)
        if item == 3:
            raise ValueError("after waiting")

    try:
        await each_within(asyncio.get_running_loop().time() + 5, [1, 2, 3], step, lambda *_: got.append("timeout"))
    except ValueError as exc:
        assert str(exc) == "after waiting"
    assert got == [10, 20, 30]


async def test_cancelling_the_request_cancels_the_waiting_step_and_is_not_a_timeout(each_within):
    state = []

    async def step(item: int) -> None:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            state.append("cancelled inside")
            raise

    task = asyncio.create_task(each_within(asyncio.get_running_loop().time() + 5, [1], step,
                                           lambda *_: state.append("timeout")))
    await asyncio.sleep(0.01)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        state.append("cancelled outside")
    assert state == ["cancelled inside", "cancelled outside"]


async def test_a_step_after_the_deadline_that_never_waits_still_finishes(each_within):
    ran = []

    async def step(item: int) -> None:
        ran.append(item)

    await each_within(asyncio.get_running_loop().time() - 1, [1, 2], step, lambda *_: ran.append("timeout"))
    assert ran == [1, 2]
