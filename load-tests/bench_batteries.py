#!/usr/bin/env python3
"""In-process cost of the batteries: CPU microseconds per /mutate and /validate of a GPU notebook pod.

    python load-tests/bench_batteries.py [--rounds 7] [--profile mutate|validate]
    python load-tests/bench_batteries.py --compare OTHER_TREE   # alternate OTHER_TREE and this tree

Builds the app's engine as `serve` does, with the default `policies/` and a standalone state holding a
personal profile (owner annotation, no stored pods), and times, with `time.process_time` (the machine
is shared: waiting for a core is not our cost):
- `engine.mutate` of the GPU notebook pod of `examples/notebook-pod.yaml` (DRA rewrite + notebook
  injection + the JSON Patch), as `/mutate` gets it (the review decoded once, outside the timing);
- `engine.validate` of the pod as that mutation left it (quota), not dry-run: admitted pods are recorded,
  as under wrk, where the same pod is created again and again;
- each battery alone (`policy.mutate` / `policy.validate`, the quota's reservation released after each).
Numbers are the best of several rounds. `--compare DIR` runs this script under DIR's code (e.g. an
unpacked `git archive` of the base commit) and under this tree in alternation, in subprocesses, and
prints both. `--profile` prints cProfile's top functions of one endpoint instead.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Awaitable

HERE = Path(__file__).resolve().parent
TREE = Path(os.environ.get("BENCH_TREE", HERE.parent)).resolve()
sys.path.insert(0, str(TREE))
sys.path.insert(0, str(HERE))

import jsonpatch  # noqa: E402

from webhook.app import Quartermaster, Settings  # noqa: E402
from webhook.model.policy import Phase  # noqa: E402
from webhook.model.review import parse_review  # noqa: E402
from workload import namespace, notebook_pod, review, write_state  # noqa: E402

PROFILE = "user000"


def build(tmp: Path) -> Quartermaster:
    state = write_state(tmp / "state" / "state.yaml",
                        [namespace("apps", False), namespace(PROFILE, True, f"{PROFILE}@example.org")], {})
    qm = Quartermaster.build(Settings(policies=TREE / "policies", state=state.parent))
    qm.load_policies()
    return qm


def bodies(qm: Quartermaster, loop: asyncio.AbstractEventLoop) -> tuple[bytes, bytes]:
    pod = notebook_pod("analysis-0", PROFILE)
    mutate_body = json.dumps(review(pod)).encode()
    result = loop.run_until_complete(qm.engine.mutate(parse_review(mutate_body)))
    mutated = jsonpatch.apply_patch(pod, [dict(op) for op in result.verdict.patch])
    return mutate_body, json.dumps(review(mutated)).encode()


def best_us(loop: asyncio.AbstractEventLoop, call: Callable[[], Awaitable[Any]], rounds: int, per_round: int) -> float:
    """Calls awaited one after the other inside one task, as the server's handler awaits the engine (and
    the engine each policy): no event-loop round trip per call is counted."""
    async def many(count: int) -> None:
        for _ in range(count):
            await call()
    loop.run_until_complete(many(50))  # warm: compiled programs, lazily built indexes, the profile's usage totals
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        loop.run_until_complete(many(per_round))
        best = min(best, (time.process_time() - started) / per_round * 1e6)
    return best


def measure(rounds: int, per_round: int) -> dict[str, float]:
    loop = asyncio.new_event_loop()
    with tempfile.TemporaryDirectory() as tmp:
        qm = build(Path(tmp))
        mutate_body, validate_body = bodies(qm, loop)
        engine = qm.engine
        m_req, v_req = parse_review(mutate_body), parse_review(validate_body)
        out = {"engine.mutate": best_us(loop, lambda: engine.mutate(m_req), rounds, per_round),
               "engine.validate": best_us(loop, lambda: engine.validate(v_req), rounds, per_round)}
        snapshot = engine.store.snapshot
        for policy in snapshot.policies_for(Phase.MUTATE):
            ctx = engine._context(m_req)

            async def mutate(policy: Any = policy, ctx: Any = ctx) -> Any:
                return await policy.mutate(m_req, dict(m_req.object), ctx)
            out[f"{type(policy).__name__}.mutate"] = best_us(loop, mutate, rounds, per_round)
        for policy in snapshot.policies_for(Phase.VALIDATE):
            ctx = engine._context(v_req)

            async def validate(policy: Any = policy, ctx: Any = ctx) -> Any:
                outcome = await policy.validate(v_req, v_req.object, ctx)
                for rollback in outcome.rollbacks:
                    rollback()
                return outcome
            out[f"{type(policy).__name__}.validate"] = best_us(loop, validate, rounds, per_round)
    loop.close()
    return out


def profile(endpoint: str, count: int = 2000) -> None:
    loop = asyncio.new_event_loop()
    with tempfile.TemporaryDirectory() as tmp:
        qm = build(Path(tmp))
        mutate_body, validate_body = bodies(qm, loop)
        req = parse_review(mutate_body if endpoint == "mutate" else validate_body)
        call = qm.engine.mutate if endpoint == "mutate" else qm.engine.validate

        async def run() -> None:
            for _ in range(count):
                await call(req)
        loop.run_until_complete(run())
        profiler = cProfile.Profile()
        profiler.enable()
        loop.run_until_complete(run())
        profiler.disable()
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(45)


def compare(other: Path, rounds: int, per_round: int, alternations: int) -> None:
    runs: dict[str, list[dict[str, float]]] = {"other": [], "this": []}
    for _ in range(alternations):
        for label, tree in (("other", other), ("this", TREE)):
            env = {**os.environ, "BENCH_TREE": str(tree)}
            done = subprocess.run([sys.executable, __file__, "--json", "--rounds", str(rounds), "--per-round",
                                   str(per_round)], env=env, check=True, capture_output=True, text=True)
            runs[label].append(json.loads(done.stdout.strip().splitlines()[-1]))
    keys = list(runs["this"][0])
    print(f"{'us CPU per call (best)':34} {'other':>9} {'this':>9} {'x':>6}")
    for key in keys:
        before = min(r.get(key, float("nan")) for r in runs["other"])
        after = min(r[key] for r in runs["this"])
        print(f"{key:34} {before:9.1f} {after:9.1f} {before / after:6.2f}")
    print(f"other = {other}, this = {TREE}; {alternations} alternations")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--per-round", type=int, default=300)
    parser.add_argument("--profile", choices=("mutate", "validate"))
    parser.add_argument("--compare", type=Path, help="another source tree to alternate with this one")
    parser.add_argument("--alternations", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="one JSON line (for --compare)")
    args = parser.parse_args()
    if args.profile:
        profile(args.profile)
        return 0
    if args.compare:
        compare(args.compare.resolve(), args.rounds, args.per_round, args.alternations)
        return 0
    result = measure(args.rounds, args.per_round)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:34} {value:9.1f} us CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
