#!/usr/bin/env python3
"""Where a review spends its time inside a running `quartermaster serve` under wrk, step by step.

    python load-tests/bench_server_steps.py gpu-validate               # plain-mutate, plain-validate, gpu-mutate, ...
    python load-tests/bench_server_steps.py gpu-mutate --seconds 10 --tree /tmp/other   # another tree's webhook/

The suite's policies, state and bodies; one server (standalone, TLS), started with `server_hook/` on its PYTHONPATH
so that it wraps the same steps as bench_steps.py (steptimer.py) and the endpoint's whole `answer`, decode to encode.
wrk warms it up (2 s), the counts start afresh (SIGUSR1), wrk runs `--seconds` (1 thread, 32 connections), and the
server writes its timings when it stops. Printed: the server's CPU per review over the run, and each step's wall time
per review inside the server. What is outside `answer` is TLS, HTTP and the event loop. The wrappers cost the server
~0.3-0.5 us each per call (about 5 % here): compare steps with steps, and trees with the same tool, not with suite.py.

In process (bench_steps.py) a step runs with its caches warm, one review after another; here each review runs
between TLS, the kernel and 31 other connections, and the same step costs ~1.4-2x as much (2026-12-04).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from drivers import Server, free_port, wrk  # noqa: E402
from steptimer import ENV  # noqa: E402
from suite import CASE_NAMES, bodies, build_state, selected_cases, serve_argv  # noqa: E402
from workload import policies_dir  # noqa: E402

THROUGHPUT = [name for name in CASE_NAMES if name != "mixed"]  # one endpoint, one body each


def measure(case: str, seconds: float, tree: Path | None, tmp: Path) -> tuple[float, int, dict[str, list[int]]]:
    """(server CPU us per review, reviews, {step: [ns, calls]})."""
    [(_, endpoint, key)] = selected_cases([case])
    policies, _ = policies_dir(tmp / "policies", with_pod_security=True)
    certs, state = tmp / "certs", build_state(tmp)
    timings = tmp / "timings.json"
    port = free_port()
    env = dict(os.environ, **{ENV: str(timings)})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree) if tree else "", str(HERE / "server_hook"), str(HERE),
                                                      env.get("PYTHONPATH", "")]))
    argv = serve_argv(policies, state, certs, port, program=[sys.executable, "-m", "webhook"])
    server = Server(argv, port, certs / "ca.crt", env=env, cwd=tree)
    try:
        if server.wait_ready(60) is None:
            raise SystemExit("the server did not become ready in 60 s")
        files = bodies(tmp, port, certs / "ca.crt")
        url = f"https://127.0.0.1:{port}/{endpoint}"
        wrk("warm-up", url, files[key], 2)
        os.kill(server.proc.pid, signal.SIGUSR1)  # counts afresh from here
        result = server.measured(lambda: [wrk(case, url, files[key], seconds)])[0]
    finally:
        server.stop()
    if not timings.exists():
        raise SystemExit("the server wrote no timings (did it stop cleanly?)")
    return result.cpu_us or 0.0, result.requests, json.loads(timings.read_text())


def table(case: str, cpu_us: float, reviews: int, steps: dict[str, list[int]]) -> str:
    lines = [f"{case}: {reviews} reviews, the server's CPU {cpu_us:.1f} us per review; inside it, wall time per review:",
             "| step | us per review | calls per review |", "| --- | ---: | ---: |"]
    for label, (spent, calls) in sorted(steps.items(), key=lambda item: -item[1][0]):
        lines.append(f"| {label} | {spent / reviews / 1000:.1f} | {calls / reviews:.1f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", choices=THROUGHPUT)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--tree", type=Path, help="another checkout whose webhook/ the server runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cpu_us, reviews, steps = measure(args.case, args.seconds, args.tree.resolve() if args.tree else None, Path(tmp))
    print(table(args.case, cpu_us, reviews, steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
