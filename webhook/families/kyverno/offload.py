"""Large Kyverno evaluations beside the event loop, in a worker thread of their own.

A `foreach` over a request's list checks each element's patch or pattern against every item of the list
(a per-container policy on 2,000 containers: 4 million anchor checks, seconds of Python). On the event loop
such a review held every other admission until it ended, up to the request's whole budget: one pod could
make every replica refuse everyone for seconds. Beside it, the loop gets the interpreter back each switch
interval (sys.getswitchinterval) and keeps answering; the evaluation still stops at the request's budget
(RuleEnv.deadline).

Only policies with a `foreach` rule, and only on objects over LARGE_BYTES of JSON: everything else costs
microseconds, far less than the hand-over to a thread. The pool is the family's own and small: a flood of
such reviews waits for it (each within its own budget) rather than taking the threads quota decisions and
API calls use.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, TypeVar

import orjson

LARGE_BYTES = 16 * 1024  # a notebook pod is ~4 KB; 16 KiB is ~400 minimal containers, whose foreach would hold the loop
WORKERS = 2

T = TypeVar("T")
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


_SIZED = object()  # EvalContext.memo key: (object, whether it is large)


def large(obj: Any, memo: dict[Any, Any]) -> bool:
    """Is the object over LARGE_BYTES as JSON? (Not plain JSON, a YAML date read by `apply`: no.) Measured
    once per object of a request (`memo`, the request's EvalContext.memo): each foreach policy asks in turn."""
    found = memo.get(_SIZED)
    if found is not None and found[0] is obj:
        return found[1]  # type: ignore[no-any-return]
    try:
        answer = len(orjson.dumps(obj)) > LARGE_BYTES
    except TypeError:
        answer = False
    memo[_SIZED] = (obj, answer)
    return answer


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="quartermaster-kyverno")
        return _pool


async def beside_the_loop(fn: Callable[..., T], *args: Any) -> T:
    """fn(*args) in the family's worker thread, in the caller's context (contextvars: the CEL context)."""
    call = functools.partial(contextvars.copy_context().run, fn, *args)
    return await asyncio.get_running_loop().run_in_executor(_executor(), call)
