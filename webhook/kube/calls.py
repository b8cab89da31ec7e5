"""Blocking client calls, run on a pool of their own.

Not asyncio.to_thread: its default pool is small (cores + 4) and shared with the policies' own
worker-thread work (quota counting); an API server that hangs must not starve that.
"""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, TypeVar

T = TypeVar("T")


class BlockingCalls:
    def __init__(self, workers: int = 16) -> None:
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kube-api")

    async def __call__(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    def shutdown(self) -> None:
        """Do not wait: a call stuck on a hung API server ends with its own request timeout."""
        self._executor.shutdown(wait=False, cancel_futures=True)
