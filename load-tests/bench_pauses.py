#!/usr/bin/env python3
"""Where an open loop's tail comes from, seen from inside `serve`: each review's wall and CPU time, and each
collection of the cyclic garbage collector, while the suite's open loop runs against it.

    python load-tests/bench_pauses.py                     # 1,000 req/s, 3 runs of 5 s, the suite's policies
    python load-tests/bench_pauses.py --defaults-only     # the default policies alone
    BENCH_TREE=/tmp/base python load-tests/bench_pauses.py   # another tree's webhook/ (e.g. a `git archive`)

The client only sees a p99; a pause inside the server (a long collection, one slow review) and a pause of the
machine (the hypervisor's steal, another process) look alike there. This runs `serve` through a small wrapper
(this file with --instrumented) that times every admission handler call (wall clock and the thread's CPU time)
and every collection (gc.callbacks), and prints the distribution beside the client's p99 and the machine's steal
time per run: a review whose CPU time is its wall time was busy; a p99 with no slow review and steal above a few
per cent was the machine's. It also prints how long the first /mutate and /validate after start took.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def instrumented_serve(record: Path, argv: list[str]) -> int:
    """The child: `quartermaster serve` with every review and collection timed; written to `record` at exit."""
    import atexit
    import threading

    from webhook.server import handlers

    reviews: list[tuple[float, float, float, str]] = []  # (started, wall us, cpu us, endpoint)
    collections: list[tuple[float, float, int, str]] = []  # (started, wall us, generation, thread)
    started: dict[str, float] = {}

    def on_collection(phase: str, info: dict) -> None:
        if phase == "start":
            started["gc"] = time.perf_counter()
        else:
            collections.append((started["gc"], (time.perf_counter() - started["gc"]) * 1e6, info["generation"],
                                threading.current_thread().name))

    answer = handlers.AdmissionEndpoint.answer

    async def timed(self, body, timeout, began):  # type: ignore[no-untyped-def]
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            return await answer(self, body, timeout, began)
        finally:
            reviews.append((wall, (time.perf_counter() - wall) * 1e6, (time.thread_time() - cpu) * 1e6, self.endpoint))

    handlers.AdmissionEndpoint.answer = timed  # type: ignore[method-assign]
    gc.callbacks.append(on_collection)
    atexit.register(lambda: record.write_text(json.dumps({"reviews": reviews, "collections": collections})))
    from webhook.cli import main

    sys.argv = ["quartermaster", *argv]
    return main()


def _cpu_ticks() -> tuple[int, int]:
    """(steal, all) of the machine's CPU time so far, in ticks: the first line of /proc/stat, read once."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return fields[7], sum(fields)


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--instrumented":
        return instrumented_serve(Path(sys.argv[2]), sys.argv[3:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--seconds", type=float, default=5.0, help="each run's length")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--defaults-only", action="store_true", help="without the 16 pod-security ValidatingPolicies")
    args = parser.parse_args()

    sys.path.insert(0, str(HERE))
    import suite
    from bench_cli import tree_env
    from drivers import Server, free_port, open_loop, percentile
    from workload import policies_dir

    tree = Path(os.environ.get("BENCH_TREE", HERE.parent)).resolve()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        policies, extra = policies_dir(tmp / "policies", with_pod_security=not args.defaults_only)
        certs, state, record = tmp / "certs", suite.build_state(tmp), tmp / "record.json"
        port = free_port()
        server = Server(suite.serve_argv(policies, state, certs, port, program=[
            sys.executable, str(Path(__file__).resolve()), "--instrumented", str(record)]), port, certs / "ca.crt",
            env=tree_env(tree), cwd=tree)
        try:
            if server.wait_ready(180) is None:
                raise RuntimeError("serve did not become ready")
            base, ca = f"https://127.0.0.1:{port}", certs / "ca.crt"
            bodies = suite.open_loop_bodies(port, ca)
            open_loop("warm-up", base, ca, bodies, 250, 1)
            measured_from = time.perf_counter()
            print(f"{tree}: default policies{f' + {extra} pod-security ValidatingPolicies' if extra else ''}, "
                  f"{args.rate:.0f} req/s, {args.runs} runs of {args.seconds:g} s")
            for run in range(args.runs):
                steal, total = _cpu_ticks()
                result = open_loop("run", base, ca, bodies, args.rate, args.seconds)
                steal_after, total_after = _cpu_ticks()
                share = (steal_after - steal) / max(1, total_after - total) * 100
                print(f"run {run + 1}: client p99 {max(r.p99_ms for r in result):.1f} ms, the machine's steal {share:.0f} %")
        finally:
            server.stop()
        data = json.loads(record.read_text())
    for endpoint in ("mutate", "validate"):  # after start: what a load left to the first requests to build
        first = next((r for r in data["reviews"] if r[3] == endpoint), None)
        if first is not None:
            print(f"the first /{endpoint} after start: {first[1] / 1000:.1f} ms")
    reviews = [r for r in data["reviews"] if r[0] >= measured_from]
    collections = [c for c in data["collections"] if c[0] >= measured_from]
    for endpoint in ("mutate", "validate"):
        cpu = [r[2] for r in reviews if r[3] == endpoint]
        wall = [r[1] for r in reviews if r[3] == endpoint]
        print(f"/{endpoint}: {len(cpu)} reviews; CPU us p50 {percentile(cpu, .5):.0f}, p99 {percentile(cpu, .99):.0f}, "
              f"p99.9 {percentile(cpu, .999):.0f}, max {max(cpu, default=float('nan')):.0f}; wall us p99.9 "
              f"{percentile(wall, .999):.0f}, max {max(wall, default=float('nan')):.0f}")
    for generation in (0, 1, 2):
        pauses = sorted(c[1] for c in collections if c[2] == generation)
        if pauses:
            print(f"collections of generation {generation}: {len(pauses)}, {sum(p > 1000 for p in pauses)} over 1 ms, "
                  f"the longest {pauses[-1] / 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
