#!/usr/bin/env python3
"""Normal admission traffic alongside slow and hostile clients: normal p99 must stay within 2x of a clean run.

    python load-tests/hostile_clients.py --requests 1000 --concurrency 16

Starts a real `quartermaster serve` (standalone, loopback), measures normal traffic alone, then the same
traffic again while these run against the same server:
- slowloris: connections that send half a request line and then nothing (re-opened when closed);
- slow bodies: headers, then one byte of body every half second;
- huge quantities: pods asking for `1e99999999` GPUs and ephemeral storage, back to back;
- deep JSON: bodies nested 100,000 levels deep, back to back;
- unreadable bodies: a `Content-Encoding: deflate` that does not inflate, and reviews whose namespace is an
  unpaired UTF-16 surrogate escape (both were 500s; the second broke every later /metrics scrape).
Prints one JSON line (both runs' percentiles, the ratio, what the hostile clients got) and exits 1 when
normal p99 under attack exceeds 2x the clean p99 or any normal review failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import ssl
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_admission import REPO, pod_review, run, standalone_server, write_profiles  # noqa: E402


def huge_quantity_review(namespace: str) -> dict:
    body = pod_review(int(time.time() * 1e6), namespace, 0)
    pod = body["request"]["object"]
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1e99999999"
    pod["spec"]["volumes"] = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1e99999999"}}}}}}]
    body["request"]["uid"] = str(uuid.uuid4())
    return body


def deep_json_body() -> bytes:
    review = json.dumps(pod_review(0, "user0000", 0)).encode()
    return review.replace(b'"spec": {', b'"spec": {"x": ' + b"[" * 100_000 + b"]" * 100_000 + b", ", 1)


async def slowloris(port: int, ctx: ssl.SSLContext, stop: asyncio.Event, seen: Counter) -> None:
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx, server_hostname="localhost")
            writer.write(b"POST /validate HTTP/1.1\r\nHost: localhost\r\n")
            await writer.drain()
            await reader.read()  # until the server closes it
            seen["slowloris closed by server"] += 1
            writer.close()
        except (OSError, ssl.SSLError):
            seen["slowloris connection error"] += 1
            await asyncio.sleep(0.5)


async def slow_body(port: int, ctx: ssl.SSLContext, stop: asyncio.Event, seen: Counter) -> None:
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx, server_hostname="localhost")
            writer.write(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\n")
            while not stop.is_set() and not reader.at_eof():
                writer.write(b" ")
                await writer.drain()
                try:
                    line = await asyncio.wait_for(reader.readline(), 0.5)
                except asyncio.TimeoutError:
                    continue
                if line:
                    seen[f"slow body answered {line.split()[1].decode()}"] += 1
                    break
            writer.close()
        except (OSError, ssl.SSLError):
            seen["slow body connection error"] += 1
            await asyncio.sleep(0.5)


def lone_surrogate_body(namespace: str) -> bytes:
    review = json.dumps(pod_review(int(time.time() * 1e6), namespace, 0))
    return review.replace(f'"namespace": "{namespace}"', '"namespace": "\\udfff"').encode()


async def flood(session: aiohttp.ClientSession, url: str, make_body, stop: asyncio.Event, seen: Counter, label: str,
                encoding: str | None = None) -> None:
    headers = {"Content-Type": "application/json", **({"Content-Encoding": encoding} if encoding else {})}
    while not stop.is_set():
        data = make_body()
        async with session.post(f"{url}/validate", data=data, headers=headers) as resp:
            payload = await resp.read()
            verdict = ""
            if resp.status == 200:
                verdict = " allowed" if json.loads(payload)["response"]["allowed"] else " denied"
            seen[f"{label} {resp.status}{verdict}"] += 1


async def attack(url: str, port: int, ca: str, args: argparse.Namespace, namespace: str, done: Any) -> Counter:
    """The hostile clients, for `seconds`; run in their own process so that they do not slow the measuring
    client's event loop (only the server is measured)."""
    ctx = ssl.create_default_context(cafile=ca)
    stop, seen = asyncio.Event(), Counter()
    deep = deep_json_body()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=4)) as hostile:
        attackers = [asyncio.create_task(slowloris(port, ctx, stop, seen)) for _ in range(args.slow)]
        attackers += [asyncio.create_task(slow_body(port, ctx, stop, seen)) for _ in range(args.slow)]
        attackers += [asyncio.create_task(flood(hostile, url, lambda: json.dumps(huge_quantity_review(namespace)),
                                                stop, seen, "huge quantity")) for _ in range(args.floods)]
        attackers += [asyncio.create_task(flood(hostile, url, lambda: deep, stop, seen, "deep JSON"))
                      for _ in range(args.floods)]
        attackers += [asyncio.create_task(flood(hostile, url, lambda: b"not deflate at all", stop, seen,
                                                "undecodable body", encoding="deflate")) for _ in range(args.floods)]
        attackers += [asyncio.create_task(flood(hostile, url, lambda: lone_surrogate_body(namespace), stop, seen,
                                                "lone surrogate")) for _ in range(args.floods)]
        while not done.is_set():  # a multiprocessing.Event: the measured run is over
            await asyncio.sleep(0.1)
        stop.set()
        for task in attackers:
            task.cancel()
        await asyncio.gather(*attackers, return_exceptions=True)
    return seen


def _attacker_process(url: str, port: int, ca: str, args: argparse.Namespace, namespace: str, done: Any,
                      results: Any) -> None:
    results.put(dict(asyncio.run(attack(url, port, ca, args, namespace, done))))


def under_attack(url: str, port: int, ca: Path, args: argparse.Namespace, namespaces: list[str]) -> tuple[dict, dict]:
    results, done = multiprocessing.Queue(), multiprocessing.Event()
    attacker = multiprocessing.Process(target=_attacker_process,
                                       args=(url, port, str(ca), args, namespaces[1], done, results))
    attacker.start()
    time.sleep(1.0)  # let the attack settle in before measuring
    try:
        result = asyncio.run(run(url, ca, args.requests, args.concurrency, args.gpu_every, namespaces, offset=args.requests))
    finally:
        done.set()
    seen = results.get(timeout=30)
    attacker.join(10)
    return result, seen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000, help="normal pods per run (a mutate and a validate each)")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--gpu-every", type=int, default=10)
    parser.add_argument("--profiles", type=int, default=100)
    parser.add_argument("--slow", type=int, default=25, help="slowloris and slow-body connections, each")
    parser.add_argument("--floods", type=int, default=1, help="back-to-back senders of huge quantities and of deep JSON, each")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        namespaces = write_profiles(Path(tmp) / "state", args.profiles)
        with standalone_server(REPO / "policies", Path(tmp), "error") as server:
            if server is None:
                print("server did not start", file=sys.stderr)
                return 1
            clean = asyncio.run(run(server.url, server.ca, args.requests, args.concurrency, args.gpu_every, namespaces))
            attacked, seen = under_attack(server.url, server.port, server.ca, args, namespaces)
    ratio = attacked["p99_ms"] / clean["p99_ms"]
    print(json.dumps({"clean": clean, "under_attack": attacked, "p99_ratio": round(ratio, 2), "hostile": dict(seen)}))
    return 0 if ratio <= 2.0 and attacked["errors"] == 0 and clean["errors"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
