#!/usr/bin/env python3
"""In process: CPU microseconds per admission through the real aiohttp handler, and what the request
logs and metrics cost of it.

    python load-tests/bench_request.py                 # every suite case, the suite's policies and state
    python load-tests/bench_request.py --profile gpu-validate
    python load-tests/bench_request.py --compare OTHER_TREE   # alternate OTHER_TREE's webhook/ and this tree's

Each case is the suite's own review (`workload.py`), posted to the handler `serve` runs (decode, engine,
metrics, log, encode) as an aiohttp request whose body has arrived; TLS and HTTP parsing are left out:
they cost quartermaster what they cost the no-op responder. Observability is timed on the verdicts the
handler produced: `Metrics.admission` + `Metrics.rule_results` + `log_admission` (at the default level,
info, with the handler's folding of repeated Audit warnings), as a share of the handler's own time.
Process CPU time, best of several rounds: on a shared machine only the best round means anything.
`--compare DIR` runs the same cases under DIR's `webhook` package (e.g. `git worktree add /tmp/base 8029031`)
and under this tree's in alternation, in subprocesses, and prints both side by side (best of all runs).
`--profile` times only the handler calls (the mocked requests are built before the profiler starts).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import cProfile
import json
import logging
import os
import pstats
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonpatch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workload import REPO, namespace, notebook_pod, plain_pod, policies_dir, review, write_state  # noqa: E402

TREE = Path(os.environ.get("BENCH_TREE", REPO)).resolve()  # whose webhook package is measured (--compare)
sys.path.insert(0, str(TREE))
from aiohttp import streams, web  # noqa: E402
from aiohttp.test_utils import make_mocked_request  # noqa: E402

from webhook.app import Quartermaster, Settings  # noqa: E402
from webhook.model.review import parse_review  # noqa: E402
from webhook.observability.logs import JsonFormatter, RepeatWindow, log_admission  # noqa: E402
from webhook.server.app import build_app  # noqa: E402

assert Path(sys.modules["webhook"].__file__ or "").resolve().is_relative_to(TREE), "webhook imported from elsewhere"

PROFILE = "user000"


_PARTS: dict[str, Any] = {}


def _request(app: web.Application, endpoint: str, body: bytes) -> web.Request:
    if not _PARTS:  # aiohttp's test doubles of the connection, made once: they are not what is measured
        probe = make_mocked_request("POST", "/", app=app)
        _PARTS.update(protocol=probe.protocol, transport=probe.transport, writer=probe.writer)
    payload = streams.StreamReader(_Protocol(), 2**16, loop=asyncio.get_running_loop())
    payload.feed_data(body)
    payload.feed_eof()
    return make_mocked_request("POST", f"/{endpoint}", headers={"Content-Type": "application/json",
                                                                "Content-Length": str(len(body))},
                               payload=payload, app=app, **_PARTS)


async def _noop(request: web.Request) -> web.Response:
    """load-tests/noop.py's handler: the yardstick's own work, subtracted from every case."""
    review = json.loads(await request.read())
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], "allowed": True}}
    return web.Response(body=json.dumps(body, separators=(",", ":")).encode(), content_type="application/json")


class _Protocol:
    """What aiohttp's StreamReader asks of its protocol; the body has arrived in full, nothing is paused."""

    _reading_paused = False

    def pause_reading(self) -> None: ...

    def resume_reading(self, resume_parser: bool = True) -> None: ...


def _cpu_us(run: Any, count: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        run(count)
        best = min(best, (time.process_time() - started) / count * 1e6)
    return best


async def _bodies(handler: Any, app: web.Application) -> dict[str, tuple[str, bytes]]:
    """The suite's cases; /validate bodies carry the pod as quartermaster's own /mutate left it."""
    async def mutated(pod: dict[str, Any]) -> dict[str, Any]:
        answer = json.loads((await handler(_request(app, "mutate", json.dumps(review(pod)).encode()))).body)["response"]
        return jsonpatch.apply_patch(pod, json.loads(base64.b64decode(answer["patch"]))) if "patch" in answer else pod

    plain = json.dumps(review(plain_pod("web-5d4f8-x2x7q", "apps"))).encode()
    gpu = notebook_pod("analysis-0", PROFILE)
    return {"plain-mutate": ("mutate", plain), "plain-validate": ("validate", plain),
            "gpu-mutate": ("mutate", json.dumps(review(gpu)).encode()),
            "gpu-validate": ("validate", json.dumps(review(await mutated(gpu))).encode())}


@dataclass
class InProcess:
    """`serve`'s application in this process, with the suite's policies and state, and the cases' bodies."""

    qm: Quartermaster
    app: web.Application
    handlers: dict[str, Any]  # "/mutate", "/validate": the route handlers `serve` runs
    cases: dict[str, tuple[str, bytes]]  # case: (endpoint, body)
    extra: int  # pod-security ValidatingPolicies loaded besides the defaults


async def in_process(tmp: Path, with_pod_security: bool = True) -> InProcess:
    policies, extra = policies_dir(tmp / "policies", with_pod_security=with_pod_security)
    namespaces = [namespace("apps", profile=False), namespace(PROFILE, True, f"{PROFILE}@example.org")]
    state = write_state(tmp / "state" / "state.yaml", namespaces, {})
    qm = Quartermaster.build(Settings(policies=policies, state=state.parent))
    qm.load_policies()
    app = build_app(qm.services())
    handlers = {r.resource.canonical: r.handler for r in app.router.routes() if r.method == "POST"}  # type: ignore[union-attr]
    logging.basicConfig(level=logging.INFO, stream=open("/dev/null", "w"))  # formatted and written, as in serve
    for h in logging.getLogger().handlers:
        h.setFormatter(JsonFormatter())
    return InProcess(qm, app, handlers, await _bodies(handlers["/mutate"], app), extra)


async def main_async(args: argparse.Namespace, tmp: Path) -> None:
    setup = await in_process(tmp, with_pod_security=not args.defaults_only)
    qm, app, handlers, cases, extra = setup.qm, setup.app, setup.handlers, setup.cases, setup.extra
    rows: dict[str, dict[str, float]] = {}
    if not args.json:
        print(f"policies: default{f' + {extra} pod-security ValidatingPolicies' if extra else ''}; CPU us per "
              f"admission, best of {args.rounds} rounds of {args.count}")
        print("| case | handler us | no-op handler us | above the no-op us | logs + metrics us | share of the handler |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, (endpoint, body) in cases.items():
        if args.profile and name != args.profile:
            continue
        handler = handlers[f"/{endpoint}"]

        async def timed(count: int, handler: Any = handler, endpoint: str = endpoint, body: bytes = body) -> float:
            best = float("inf")
            for _ in range(args.rounds):
                # aiohttp's mocked requests (~90 us each, and as noisy) are built before the clock starts
                requests = [_request(app, endpoint, body) for _ in range(count)]
                started = time.process_time()
                for http in requests:
                    await handler(http)
                best = min(best, (time.process_time() - started) / count * 1e6)
                del requests
            return best

        if args.profile:
            requests = [_request(app, endpoint, body) for _ in range(args.count * args.rounds)]
            profiler = cProfile.Profile()
            profiler.enable()
            for http in requests:
                await handler(http)
            profiler.disable()
            pstats.Stats(profiler).sort_stats(args.sort).print_stats(45)
            continue
        handler_us = await timed(args.count)
        noop_us = await timed(args.count, _noop)
        request = parse_review(body)
        verdict = (await qm.engine.mutate(request)).verdict if endpoint == "mutate" else await qm.engine.validate(request)
        metrics, log, repeats = qm.metrics, logging.getLogger("quartermaster.admission"), RepeatWindow()

        def observe(count: int) -> None:
            for _ in range(count):
                metrics.admission(endpoint, request.operation, request.kind.kind, "allowed", 0.001)
                metrics.rule_results(request, verdict.results)
                log_admission(log, endpoint, request, verdict, 0.001, repeats)
        obs_us = _cpu_us(observe, args.count, args.rounds)
        rows[name] = {"handler": handler_us, "noop": noop_us, "above": handler_us - noop_us, "obs": obs_us}
        if not args.json:
            print(f"| {name} | {handler_us:.0f} | {noop_us:.0f} | {handler_us - noop_us:.0f} | {obs_us:.1f} | "
                  f"{obs_us / handler_us:.1%} |")
    if args.json:
        print(json.dumps(rows))


def compare(args: argparse.Namespace) -> None:
    """Alternate the other tree and this one, each in a fresh process; best of every run of each."""
    trees = {"other": args.compare.resolve(), "this": REPO}
    runs: dict[str, list[dict[str, dict[str, float]]]] = {"other": [], "this": []}
    command = [sys.executable, __file__, "--json", "--rounds", str(args.rounds), "--count", str(args.count)]
    if args.defaults_only:
        command.append("--defaults-only")
    for _ in range(args.alternations):
        for label, tree in trees.items():
            done = subprocess.run(command, env={**os.environ, "BENCH_TREE": str(tree)}, check=True,
                                  capture_output=True, text=True)
            runs[label].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"CPU us per admission (each side: best of {args.alternations} runs x {args.rounds} rounds of "
          f"{args.count}); above the no-op: the best handler less the best no-op of every run of both sides")
    print("| case | handler other | handler this | saved | above the no-op other | above the no-op this |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for case in runs["this"][0]:
        before, after = (min(r[case]["handler"] for r in runs[side]) for side in ("other", "this"))
        noop = min(r[case]["noop"] for side in runs.values() for r in side)
        print(f"| {case} | {before:.1f} | {after:.1f} | {before - after:.1f} | {before - noop:.1f} | "
              f"{after - noop:.1f} |")
    print(f"other = {trees['other']}, this = {trees['this']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300, help="admissions per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--defaults-only", action="store_true", help="without the pod-security ValidatingPolicies")
    parser.add_argument("--sort", default="cumulative", help="cProfile order: cumulative, tottime")
    parser.add_argument("--profile", metavar="CASE", help="cProfile one case: plain-mutate, plain-validate, gpu-mutate, gpu-validate")
    parser.add_argument("--compare", type=Path, metavar="OTHER_TREE", help="another source tree to alternate with this one")
    parser.add_argument("--alternations", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="one JSON line of the numbers (for --compare)")
    args = parser.parse_args()
    if args.compare:
        compare(args)
        return 0
    with tempfile.TemporaryDirectory() as name:
        asyncio.run(main_async(args, Path(name)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
