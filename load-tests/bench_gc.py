#!/usr/bin/env python3
"""Collector pauses with a large cluster state that arrives after start-up (live mode's informers).

    python load-tests/bench_gc.py                    # 50,000 stored pods, 20,000 watch events
    python load-tests/bench_gc.py --pods 10000 --events 5000

`serve` freezes what start-up loaded, but in live mode the pods arrive afterwards, from the informers'
first list: each of CPython's full collections then walks all of them. This replays that in process, on
the live cache (`webhook.kube.cache.ObjectCache`) and realistic stored pods (load-tests/workload.py, ~4 KB
each, decoded from JSON as the informer decodes them): the list, then a stream of watch events (each a
pod replaced by a freshly decoded copy), twice, once as before (nothing frozen after start-up) and once
with the collector keeper (`webhook.server.collector`: settle after the list, check every `--check-every`
events as its timer would). Every collection's pause is timed (gc.callbacks). Prints, per run: the pause
of the full collections during the events (count, longest), the total time collecting, and what one full
collection costs at the end.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workload import REPO, _stored_pod_template  # noqa: E402

sys.path.insert(0, str(REPO))
from webhook.kube.cache import ObjectCache  # noqa: E402
from webhook.server.collector import CollectorKeeper  # noqa: E402


class Pauses:
    def __init__(self) -> None:
        self.started = 0.0
        self.full: list[float] = []
        self.total = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self.started = time.perf_counter()
            return
        seconds = time.perf_counter() - self.started
        self.total += seconds
        if info["generation"] == 2:
            self.full.append(seconds)


def _garbage_cycle() -> None:
    try:
        raise ValueError("a review's error")
    except ValueError as exc:
        frame_holder = [exc]
        frame_holder.append(frame_holder)  # exc -> traceback -> frame -> frame_holder -> exc


def run(pods: int, events: int, keeper: CollectorKeeper | None, check_every: int) -> dict[str, float]:
    template = _stored_pod_template(as_json=True)
    bodies = [template.replace("NAMESPACE", f"user{i % 500:03d}").replace("NAME", f"nb-{i:05d}-0")
              .replace("UID", f"{i:08d}").encode() for i in range(pods)]
    gc.collect()
    gc.freeze()  # what `serve` froze at start-up: the process before the informers listed
    cache = ObjectCache(namespaced=True)
    pauses = Pauses()
    gc.callbacks.append(pauses)
    try:
        for body in bodies:  # the first list
            cache.put(orjson.loads(body))
        if keeper is not None:
            keeper.settle()
        listed = len(pauses.full)
        pauses.full.clear()
        pauses.total = 0.0
        for n in range(events):  # the watch: each event a newly decoded object, one in ten a new pod
            body = bodies[(n * 7919) % pods]
            cache.put(orjson.loads(body.replace(b'"nb-', b'"new-%d-' % n, 1) if n % 10 == 0 else body))
            _garbage_cycle()  # what serving a review leaves to the collector: cycles (futures, tracebacks)
            if keeper is not None and n % check_every == check_every - 1:
                keeper.check()
        during = list(pauses.full)
        total = pauses.total
        started = time.perf_counter()
        gc.collect()
        last = time.perf_counter() - started
    finally:
        gc.callbacks.remove(pauses)
        del cache
        gc.unfreeze()
        gc.collect()
    return {"listed_full": listed, "full": len(during), "longest_ms": max(during, default=0.0) * 1e3,
            "total_ms": total * 1e3, "one_full_ms": last * 1e3, "settles": keeper.settles if keeper else 0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--check-every", type=int, default=1_000, help="watch events between the keeper's checks")
    args = parser.parse_args()
    print(f"{args.pods} stored pods listed after start-up, then {args.events} watch events")
    print("| run | full collections during the events | longest pause ms | collecting ms in all | one full collection after ms | keeper settles |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, keeper in (("before (nothing frozen after start-up)", None),
                         ("collector keeper", CollectorKeeper(synced=lambda: True))):
        r = run(args.pods, args.events, keeper, args.check_every)
        print(f"| {name} | {r['full']} | {r['longest_ms']:.0f} | {r['total_ms']:.0f} | {r['one_full_ms']:.0f} | {r['settles']} |")


if __name__ == "__main__":
    main()
