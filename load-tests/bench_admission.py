#!/usr/bin/env python3
"""Admission throughput and latency of a real `quartermaster serve` over HTTPS on loopback.

    python load-tests/bench_admission.py --requests 3000 --concurrency 32

Starts the server as a subprocess (standalone, self-signed certificates in a temporary directory),
sends a bounded number of AdmissionReviews (mutate then validate of distinct pods, spread over
profiles so quota decisions are exercised), stops the server and prints one JSON line of results.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import aiohttp

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def pod_review(i: int, namespace: str, gpus: int) -> dict:
    limits = {"cpu": "1", "memory": "1Gi"}
    if gpus:
        limits["nvidia.com/gpu"] = str(gpus)
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": f"bench-{i}", "namespace": namespace, "labels": {"app": "bench"}},
           "spec": {"containers": [{"name": "main", "image": "python:3.12", "resources": {"limits": limits}}]}}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": str(uuid.uuid4()), "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"}, "name": f"bench-{i}", "namespace": namespace,
        "operation": "CREATE", "userInfo": {"username": "bench"}, "object": pod, "dryRun": False}}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def write_profiles(directory: Path, count: int) -> list[str]:
    """`count` personal Kubeflow profiles, as the standalone state seed."""
    names = [f"user{i:04d}" for i in range(count)]
    docs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": name, "labels": {"app.kubernetes.io/part-of": "kubeflow-profile"}, "annotations": {"owner": f"{name}@example.org"}}}
        for name in names]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "profiles.yaml").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
    return names


async def run(url: str, ca: Path, total: int, concurrency: int, gpu_every: int, namespaces: list[str], offset: int = 0,
              endpoints: tuple[str, ...] = ("mutate", "validate")) -> dict:
    ctx = ssl.create_default_context(cafile=str(ca))
    latencies: list[float] = []
    errors = 0
    counter = iter(range(offset, offset + total))  # offset: a second run admits new pods
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=concurrency)) as session:
        async def worker() -> None:
            nonlocal errors
            for i in counter:
                namespace = namespaces[i % len(namespaces)]
                body = pod_review(i, namespace, 1 if gpu_every and i % gpu_every == 0 else 0)
                for endpoint in endpoints:
                    started = time.perf_counter()
                    try:
                        async with session.post(f"{url}/{endpoint}?timeout=10s", json=body) as resp:
                            await resp.read()
                            if resp.status != 200:
                                errors += 1
                    except aiohttp.ClientError:
                        errors += 1
                    latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    return {
        "reviews": len(latencies), "errors": errors, "seconds": round(elapsed, 3),
        "reviews_per_second": round(len(latencies) / elapsed, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p95_ms": round(percentile(latencies, 0.95) * 1000, 2),
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="pods to admit (each is a mutate and a validate review)")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--gpu-every", type=int, default=10, help="every Nth pod asks for one GPU (0: none)")
    parser.add_argument("--policies", type=Path, default=REPO / "policies")
    parser.add_argument("--profiles", type=int, default=100, help="personal profiles the pods are spread over")
    parser.add_argument("--endpoints", default="mutate,validate", help="reviews sent per pod, in order (e.g. validate)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        namespaces = write_profiles(Path(tmp) / "state", args.profiles)
        with standalone_server(args.policies, Path(tmp), "warning") as server:
            if server is None:
                print("server did not start", file=sys.stderr)
                return 1
            cpu_before = _cpu_seconds(server.pid)
            result = asyncio.run(run(server.url, server.ca, args.requests, args.concurrency, args.gpu_every, namespaces,
                                     endpoints=tuple(args.endpoints.split(","))))
            # the server's own CPU per review: unlike req/s, not skewed by other work on a shared machine
            result["server_cpu_ms_per_review"] = round((_cpu_seconds(server.pid) - cpu_before) * 1000 / result["reviews"], 3)
    result.update({"concurrency": args.concurrency, "profiles": args.profiles, "policies": str(args.policies)})
    print(json.dumps(result))
    return 0 if result["errors"] == 0 else 1


@dataclass(frozen=True)
class Server:
    url: str
    port: int
    ca: Path
    pid: int = 0


@contextlib.contextmanager
def standalone_server(policies: Path, tmp: Path, log_level: str) -> Iterator[Server | None]:
    """`quartermaster serve` standalone on a free port with the state in tmp/state and certificates in
    tmp/certs; yields it once /readyz answers (None if it exited or took over 30 s), stops it after."""
    port, certs = free_port(), tmp / "certs"
    proc = subprocess.Popen([sys.executable, "-m", "webhook", "serve", "--policies", str(policies), "--state",
                             str(tmp / "state"), "--cert-dir", str(certs), "--host", "127.0.0.1", "--port", str(port),
                             "--log-level", log_level], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not (certs / "ca.crt").exists() or not _ready(port, certs / "ca.crt"):
            if proc.poll() is not None or time.monotonic() > deadline:
                yield None
                return
            time.sleep(0.2)
        yield Server(f"https://127.0.0.1:{port}", port, certs / "ca.crt", proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _ready(port: int, ca: Path) -> bool:
    import urllib.request
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=ssl.create_default_context(cafile=str(ca)), timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


if __name__ == "__main__":
    raise SystemExit(main())
