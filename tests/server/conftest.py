"""Every server test runs on both event loops `serve` may run on: asyncio's own and uvloop (its default)."""

import asyncio
import signal

import pytest
import uvloop


def pytest_asyncio_loop_factories(config, item):
    return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}


@pytest.fixture(autouse=True)
def _signal_handlers_restored():
    """serve adds SIGTERM and SIGINT handlers to its loop, and uvloop leaves its own installed when the
    loop closes (`eventloop.run` restores them for the command): the tests after these must not inherit them."""
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    yield
    for sig, handler in before.items():
        signal.signal(sig, handler)
