#!/usr/bin/env python3
"""Where one suite case's review spends its time, step by step, in process (wall time per review).

    python load-tests/bench_steps.py gpu-validate          # plain-mutate, plain-validate, gpu-mutate, gpu-validate
    BENCH_TREE=/path/to/other/checkout python load-tests/bench_steps.py gpu-validate

The real aiohttp handler of bench_request.py, 200 reviews to warm up, then `--count` reviews with a few of the
request path's steps wrapped in timers (each wrapper costs ~0.2 us). Steps nest: the engine's batch answer
(`_answered`: the CEL family's joined program) and the batteries (the quota decision, the notebook injection, the
DRA rewrite) are inside the handler, the verdict inside the engine. A
full collection of the cyclic collector lands in whichever step runs at the time: compare runs, alternate trees,
and read the steps that move together.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_request  # noqa: E402  (puts BENCH_TREE's webhook package first on the path)

import webhook.engine.dispatch as dispatch  # noqa: E402
import webhook.server.handlers as handlers  # noqa: E402
from webhook.platform.dra.mutator import DeviceClaimRewrite  # noqa: E402
from webhook.platform.notebook.policy import NotebookInjection  # noqa: E402
from webhook.platform.quota.policy import ProfileQuotaPolicy  # noqa: E402

TOTALS: dict[str, int] = {}


def timed(owner: Any, name: str, label: str | None = None) -> None:
    """Replace owner.name (a function, method or coroutine method) by the same, timed into TOTALS[label]; a
    coroutine's time runs until it returns, its waits included (the batteries). Told by what a call returns, not
    by inspect.iscoroutinefunction, which says no for a coroutine method compiled by mypyc (webhook/compiled.py)."""
    inner: Callable[..., Any] = getattr(owner, name)
    key = label or name

    def add(started: int) -> None:
        TOTALS[key] = TOTALS.get(key, 0) + time.perf_counter_ns() - started

    async def finish(awaitable: Any, started: int) -> Any:
        try:
            return await awaitable
        finally:
            add(started)

    def step(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter_ns()
        try:
            result = inner(*args, **kwargs)
        except BaseException:
            add(started)
            raise
        if inspect.isawaitable(result):
            return finish(result, started)
        add(started)
        return result
    setattr(owner, name, step)


async def main_async(case: str, count: int, tmp: Path) -> None:
    setup = await bench_request.in_process(tmp)
    qm, app, routes = setup.qm, setup.app, setup.handlers
    endpoint, body = setup.cases[case]
    handler = routes[f"/{endpoint}"]
    for http in [bench_request._request(app, endpoint, body) for _ in range(200)]:
        await handler(http)
    timed(handlers, "parse_review")
    timed(handlers, "log_admission")
    timed(handlers, "json_bytes", "encode")
    timed(dispatch, "_answered")
    timed(dispatch.jsonpatch, "diff", "patch diff")
    for method in ("_verdict", "_record", "_context"):
        timed(dispatch.AdmissionEngine, method)
    timed(type(qm.metrics), "admission", "metrics")
    timed(type(qm.metrics), "rule_results", "metrics per result")
    timed(ProfileQuotaPolicy, "validate", "quota (battery)")
    timed(NotebookInjection, "mutate", "notebook injection")
    timed(DeviceClaimRewrite, "mutate", "DRA rewrite")
    requests = [bench_request._request(app, endpoint, body) for _ in range(count)]
    started = time.perf_counter_ns()
    for http in requests:
        await handler(http)
    total = time.perf_counter_ns() - started
    print(f"{case}: {total / count / 1000:.1f} us per review (handler, wall time, {count} reviews)")
    for label, spent in sorted(TOTALS.items(), key=lambda item: -item[1]):
        print(f"  {label:20s} {spent / count / 1000:6.1f} us")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", choices=["plain-mutate", "plain-validate", "gpu-mutate", "gpu-validate"])
    parser.add_argument("--count", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main_async(args.case, args.count, Path(tmp)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
