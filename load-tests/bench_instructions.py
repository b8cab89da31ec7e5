#!/usr/bin/env python3
"""In process: machine instructions per admission of each suite case, counted by valgrind (callgrind).

    python load-tests/bench_instructions.py                       # every case, this tree
    python load-tests/bench_instructions.py --compare OTHER_TREE  # and another tree's webhook/, side by side
    python load-tests/bench_instructions.py --cases gpu-validate --count 500

On a shared machine, time per request moves by tens of percent with the neighbours' load; the number of
instructions a request executes does not (two runs of one tree agree to ~0.2 %). So a change of a few
percent, invisible in req/s and in CPU time, can be told apart here: the tool for deciding whether a change to
the request path pays, before the side-by-side suite (`suite.py`) says what it does to the ratios.

Each (tree, case) is one process under `valgrind --tool=callgrind --instr-atstart=no`: bench_request.py's
setup (the real aiohttp handler `serve` runs, the suite's policies and state, 100 admissions to warm up, the
mocked requests built) runs uninstrumented; then instrumentation is switched on (`callgrind_control -i on`),
`--count` admissions run, and the process ends at once. What is counted is the handler's work (decode, engine,
metrics, log, encode) plus a few hundred instructions of the switch, shared by both trees. Instructions are not
time: a cache miss costs one instruction and a hundred cycles, so use this to compare two versions of the same
code, and the suite to say what a change is worth in requests per second. Needs valgrind (`apt-get install -y
valgrind`); about half a minute per case and tree.

Compare two copies side by side (`git archive` each under one directory, run this file from one of them): the same
code counted from the repository's own checkout and from a copy elsewhere differed by 6 % on gpu-validate.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = ("plain-mutate", "plain-validate", "gpu-mutate", "gpu-validate")


async def child(case: str, count: int, flag: Path) -> None:
    """Runs under valgrind: set up, say so through `flag`, wait for "go" (instrumentation on), admit `count`."""
    sys.path.insert(0, str(HERE))
    import bench_request  # puts BENCH_TREE's webhook package first on the path

    with tempfile.TemporaryDirectory() as tmp:
        setup = await bench_request.in_process(Path(tmp))
        endpoint, body = setup.cases[case]
        handler, app = setup.handlers[f"/{endpoint}"], setup.app
        for _ in range(100):  # lazily built plans, first counts of a profile: the steady state is measured
            await handler(bench_request._request(app, endpoint, body))
        requests = [bench_request._request(app, endpoint, body) for _ in range(count)]
        flag.write_text("ready")
        while flag.read_text() != "go":
            time.sleep(0.02)
        for http in requests:
            await handler(http)
        os._exit(0)  # nothing after the measured admissions is counted: no teardown, no collection at exit


def count_instructions(tree: Path, case: str, count: int) -> int:
    """Instructions per admission of `case` with `tree`'s webhook package."""
    with tempfile.TemporaryDirectory() as tmp:
        flag = Path(tmp) / "flag"
        flag.write_text("")
        argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={tmp}/callgrind.out",
                sys.executable, __file__, "--child", case, "--count", str(count), "--flag", str(flag)]
        proc = subprocess.Popen(argv, env={**os.environ, "BENCH_TREE": str(tree)}, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 600
        while flag.read_text() != "ready":
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"{case} under valgrind did not get ready: {proc.communicate()[1][-2000:]}")
            time.sleep(0.1)
        subprocess.run(["callgrind_control", "--instr=on", str(proc.pid)], check=True, capture_output=True)
        flag.write_text("go")
        _, err = proc.communicate(timeout=1800)
        collected = re.search(r"Collected : (\d+)", err)
        if collected is None:
            raise RuntimeError(f"no instruction count from valgrind for {case}: {err[-2000:]}")
        return int(collected.group(1)) // count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--count", type=int, default=300, help="admissions counted per case and tree")
    parser.add_argument("--compare", type=Path, metavar="OTHER_TREE", help="another tree (e.g. a `git archive` of main)")
    parser.add_argument("--jobs", type=int, default=2, help="valgrind processes at a time (the two trees of a case)")
    parser.add_argument("--child", metavar="CASE", help=argparse.SUPPRESS)
    parser.add_argument("--flag", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        asyncio.run(child(args.child, args.count, args.flag))
        return 0
    for tool in ("valgrind", "callgrind_control"):
        if shutil.which(tool) is None:
            print(f"{tool} not found: apt-get install -y valgrind", file=sys.stderr)
            return 2
    cases = [c for c in args.cases.split(",") if c]
    unknown = set(cases) - set(CASES)
    if unknown:
        parser.error(f"unknown cases {sorted(unknown)}; known: {', '.join(CASES)}")
    this = HERE.parent
    trees = {"other": args.compare.resolve(), "this": this} if args.compare else {"this": this}
    print(f"instructions per admission (callgrind, {args.count} admissions each, in process, the suite's policies)")
    if args.compare:
        print("| case | other | this | change |\n| --- | ---: | ---: | ---: |")
    else:
        print("| case | instructions |\n| --- | ---: |")
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:  # instruction counts do not depend on the load
        for case in cases:
            futures = {label: pool.submit(count_instructions, tree, case, args.count) for label, tree in trees.items()}
            counts = {label: future.result() for label, future in futures.items()}
            if args.compare:
                change = counts["this"] / counts["other"] - 1
                print(f"| {case} | {counts['other']:,} | {counts['this']:,} | {change:+.1%} |", flush=True)
            else:
                print(f"| {case} | {counts['this']:,} |", flush=True)
    if args.compare:
        print(f"other = {trees['other']}, this = {this}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
