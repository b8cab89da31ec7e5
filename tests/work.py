"""Measures of work that a busy machine cannot change, for tests that prove a hostile input is bounded.

A wall-clock limit fails on a shared CI machine although the code is right; these count what the code does
instead: Python lines executed, bytes allocated, or whether a call ends at all in a child process (a
backtracking C engine holds the GIL, so only another process can stop it)."""

from __future__ import annotations

import subprocess
import sys
import tracemalloc
from typing import Any, Callable

from tests.support import REPO

HANG_GUARD_SECONDS = 60  # stops a hung test; not a speed limit


def lines_run(call: Callable[[], Any]) -> int:
    """Python lines executed by call() in this thread (exceptions it raises are part of its work)."""
    count = 0

    def local(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def on_call(frame: Any, event: str, arg: Any) -> Any:
        return local

    previous = sys.gettrace()  # a coverage tracer, when one runs, is put back
    sys.settrace(on_call)
    try:
        call()
    except Exception:
        pass
    finally:
        sys.settrace(previous)
    return count


def peak_allocated(call: Callable[[], Any]) -> int:
    """The most bytes call() held at once beyond what was allocated before (big-integer work shows here)."""
    already = tracemalloc.is_tracing()
    if not already:
        tracemalloc.start()
    tracemalloc.reset_peak()
    before, _ = tracemalloc.get_traced_memory()
    try:
        call()
    except Exception:
        pass
    finally:
        _, peak = tracemalloc.get_traced_memory()
        if not already:
            tracemalloc.stop()
    return peak - before


def ends_in_a_child(source: str) -> subprocess.CompletedProcess[str]:
    """Runs `source` in a fresh interpreter from the checkout; a call that never ends fails the test at the
    hang guard instead of holding the test process."""
    try:
        return subprocess.run([sys.executable, "-c", source], cwd=REPO, capture_output=True, text=True,
                              timeout=HANG_GUARD_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"did not end within the hang guard ({HANG_GUARD_SECONDS} s):\n{source}") from None
