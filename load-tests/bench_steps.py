#!/usr/bin/env python3
"""Where one suite case's review spends its time, step by step, in process (wall time per review).

    python load-tests/bench_steps.py gpu-validate          # plain-mutate, plain-validate, gpu-mutate, gpu-validate
    BENCH_TREE=/path/to/other/checkout python load-tests/bench_steps.py gpu-validate

The real aiohttp handler of bench_request.py, 200 reviews to warm up, then `--count` reviews with a few of the
request path's steps wrapped in timers (steptimer.py; each wrapper costs ~0.2 us). Steps nest: the engine's batch answer
(`_answered`: the CEL family's joined program) and the batteries (the quota decision, the notebook injection, the
DRA rewrite) are inside the handler, the verdict inside the engine. A
full collection of the cyclic collector lands in whichever step runs at the time: compare runs, alternate trees,
and read the steps that move together. The same steps timed inside a running server: bench_server_steps.py.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_request  # noqa: E402  (puts BENCH_TREE's webhook package first on the path)

from steptimer import TOTALS, request_path_steps  # noqa: E402


async def main_async(case: str, count: int, tmp: Path) -> None:
    setup = await bench_request.in_process(tmp)
    qm, app, routes = setup.qm, setup.app, setup.handlers
    endpoint, body = setup.cases[case]
    handler = routes[f"/{endpoint}"]
    for http in [bench_request._request(app, endpoint, body) for _ in range(200)]:
        await handler(http)
    request_path_steps(type(qm.metrics))
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
