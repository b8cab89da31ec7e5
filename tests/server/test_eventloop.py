"""serve's choice of event loop: uvloop by default where it imports, asyncio's own on request."""

import asyncio

import pytest
import uvloop

from webhook.server.eventloop import loop_factory, loop_name, run


def test_auto_is_uvloop_where_it_is_installed():
    name, factory = loop_factory("auto")
    assert name == "uvloop" and factory is uvloop.new_event_loop


@pytest.mark.parametrize("choice", ["asyncio", "uvloop", "auto"])
def test_run_runs_the_coroutine_on_the_chosen_loop(choice):
    async def main():
        await asyncio.sleep(0)
        return loop_name()

    assert run(main(), loop_factory(choice)) == ("asyncio" if choice == "asyncio" else "uvloop")


def test_unknown_choice_is_refused():
    with pytest.raises(ValueError, match="choose one of auto, uvloop, asyncio"):
        loop_factory("trio")


@pytest.mark.parametrize("choice", ["asyncio", "uvloop"])
def test_signal_handlers_are_as_they_were_after_the_loop(choice):
    import signal

    before = signal.getsignal(signal.SIGTERM)

    async def main():
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, lambda: None)  # as serve does

    run(main(), loop_factory(choice))
    assert signal.getsignal(signal.SIGTERM) == before
