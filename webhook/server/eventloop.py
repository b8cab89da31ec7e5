"""Which asyncio event loop `serve` runs on: uvloop where it is installed, the standard one otherwise.

uvloop's loop and TLS transport are written in Cython over libuv: on this project's benchmark the no-op
responder itself answers more reviews per second on it, and every review of ours spends less outside our own
code (docs/performance.md). Nothing in quartermaster depends on the loop's kind (the tests run both), so
`--event-loop asyncio` is there for a platform without uvloop wheels or to rule the loop out in a bug hunt.
"""

from __future__ import annotations

import asyncio
import signal
from typing import Any, Callable, Coroutine, TypeVar

T = TypeVar("T")
CHOICES = ("auto", "uvloop", "asyncio")


class LoopUnavailable(Exception):
    """`--event-loop uvloop` asked for, uvloop not importable."""


def loop_factory(choice: str) -> tuple[str, Callable[[], asyncio.AbstractEventLoop] | None]:
    """(the loop's name, a factory for asyncio.Runner; None: the standard loop)."""
    if choice not in CHOICES:
        raise ValueError(f"event loop {choice!r}: choose one of {', '.join(CHOICES)}")
    if choice == "asyncio":
        return "asyncio", None
    try:
        import uvloop
    except ImportError as exc:
        if choice == "uvloop":
            raise LoopUnavailable(f"--event-loop uvloop: uvloop cannot be imported ({exc}); install it "
                                  "(pip install uvloop) or use --event-loop asyncio") from None
        return "asyncio", None
    return "uvloop", uvloop.new_event_loop


_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def run(main: Coroutine[Any, Any, T], loop: tuple[str, Callable[[], asyncio.AbstractEventLoop] | None]) -> T:
    """asyncio.run(main) on the loop `loop_factory` chose. The signal handlers are as they were after it:
    uvloop leaves its own behind when it closes, and a process forked later would ignore SIGTERM."""
    before = {sig: signal.getsignal(sig) for sig in _SIGNALS}
    try:
        with asyncio.Runner(loop_factory=loop[1]) as runner:
            return runner.run(main)
    finally:
        for sig, handler in before.items():
            if handler is not None:  # None: set from C, not ours to restore
                signal.signal(sig, handler)


def loop_name() -> str:
    """The running loop's kind, for the start-up log line."""
    return "uvloop" if type(asyncio.get_running_loop()).__module__.startswith("uvloop") else "asyncio"
