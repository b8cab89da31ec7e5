"""Load drivers for the suite: servers as subprocesses, wrk (closed loop), a paced client (open loop, paced.py).

Everything targets 127.0.0.1 and stops by itself.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from paced import Paced  # load-tests/, beside this file, as every suite script runs it
from webhook.server import eventloop

HERE = Path(__file__).resolve().parent
LUA = HERE / "post.lua"
UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0, "m": 60000.0}


@dataclass
class Result:
    case: str
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int = 0
    ratio: float | None = None
    requests: int = 0  # answered in the run
    cpu_us: float | None = None  # the server's CPU time (user + system) per answered request
    client_late_p99_ms: float | None = None  # open loop: how late the client itself sent (the instrument's share)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def ready(port: int, ca: Path) -> bool:
    try:
        context = ssl.create_default_context(cafile=str(ca))
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=context, timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


class Server:
    """A server subprocess; `wait_ready` returns the seconds from spawn to a 200 on /readyz."""

    def __init__(self, argv: list[str], port: int, ca: Path, env: dict[str, str] | None = None,
                 cwd: Path | None = None) -> None:
        self.port, self.ca = port, ca
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)

    def wait_ready(self, timeout: float) -> float | None:
        deadline = self.started + timeout
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}: {self.proc.args}")
            if self.ca.exists() and ready(self.port, self.ca):
                return time.perf_counter() - self.started
            time.sleep(0.05)
        return None

    def cpu_seconds(self) -> float:
        """User + system CPU the server has used so far: per request, it does not depend on how much of
        the machine other processes took, as req/s does."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def measured(self, run: Callable[[], list[Result]]) -> list[Result]:
        """`run`'s results, each with the server's CPU per request over the whole run."""
        before = self.cpu_seconds()
        results = run()
        spent, answered = self.cpu_seconds() - before, sum(r.requests for r in results)
        for result in results:
            result.cpu_us = spent / answered * 1e6 if answered else None
        return results

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text.strip())
    return float(match.group(1)) * UNITS[match.group(2)] if match else float("nan")


def parse_wrk(case: str, output: str) -> Result:
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    p50 = _ms(re.search(r"^\s+50%\s+(\S+)", output, re.M).group(1))
    p99 = _ms(re.search(r"^\s+99%\s+(\S+)", output, re.M).group(1))
    errors = sum(int(m) for m in re.findall(r"Non-2xx or 3xx responses: (\d+)", output))
    errors += sum(int(m) for m in re.findall(r"Socket errors: connect (\d+)", output))
    requests = int(re.search(r"(\d+) requests in", output).group(1))
    return Result(case, rps, p50, p99, errors, requests=requests)


def wrk_command(url: str, body: Path, seconds: float, connections: int) -> tuple[list[str], dict[str, str]]:
    argv = ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency", "-s", str(LUA), url]
    return argv, {**os.environ, "QM_BODY": str(body)}


def wrk(case: str, url: str, body: Path, seconds: float, connections: int = 32) -> Result:
    argv, env = wrk_command(url, body, seconds, connections)
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=seconds + 30)
    return parse_wrk(case, done.stdout)


def wrk_together(runs: list[tuple[str, str, Path]], seconds: float, connections: int) -> list[Result]:
    """Several wrk processes at the same time (mixed saturation): each gets its own result."""
    procs = []
    for case, url, body in runs:
        argv, env = wrk_command(url, body, seconds, connections)
        procs.append((case, subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)))
    return [parse_wrk(case, proc.communicate(timeout=seconds + 30)[0]) for case, proc in procs]


async def _open_loop_aiohttp(base: str, ca: Path, bodies: list[tuple[str, bytes]], rate: float,
                             seconds: float) -> dict[str, list[float]]:
    import aiohttp

    context = ssl.create_default_context(cafile=str(ca))
    latencies: dict[str, list[float]] = {"mutate": [], "validate": [], "errors": []}
    total = int(rate * seconds)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context, limit=64)) as session:
        # open the connections first (TLS handshakes are not what this case measures)
        warm = [session.post(f"{base}/{bodies[i % len(bodies)][0]}", data=bodies[i % len(bodies)][1],
                             headers={"Content-Type": "application/json"}) for i in range(64)]
        for resp in await asyncio.gather(*warm):
            await resp.read()
            resp.release()
        start = time.perf_counter() + 0.2

        async def one(i: int) -> None:
            scheduled = start + i / rate
            await asyncio.sleep(max(0.0, scheduled - time.perf_counter()))
            endpoint, body = bodies[i % len(bodies)]
            try:
                async with session.post(f"{base}/{endpoint}", data=body,
                                        headers={"Content-Type": "application/json"}) as resp:
                    await resp.read()
                    ok = resp.status == 200
            except aiohttp.ClientError:
                ok = False
            # measured from when the request was due, not when it left: no coordinated omission
            latencies[endpoint if ok else "errors"].append((time.perf_counter() - scheduled) * 1000)

        await asyncio.gather(*(one(i) for i in range(total)))
    return latencies


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


OPEN_LOOP_CLIENTS = ("paced", "aiohttp")


def open_loop(case: str, base: str, ca: Path, bodies: list[tuple[str, bytes]], rate: float, seconds: float,
              client: str = "paced") -> list[Result]:
    """`client`: "paced" (paced.py, on uvloop when installed: the lean instrument) or "aiohttp" (the client
    the suite used before; each request a coroutine of aiohttp's pooled client, ~0.5 ms of CPU each)."""
    late: list[float] = []
    if client == "aiohttp":
        latencies = asyncio.run(_open_loop_aiohttp(base, ca, bodies, rate, seconds))
        errors = len(latencies["errors"])
    else:
        # uvloop when installed, as `serve` chooses it (and with the signal handlers left as they were)
        measured = eventloop.run(Paced(base, ca, bodies).run(rate, seconds), eventloop.loop_factory("auto"))
        latencies, errors, late = measured.by_endpoint, measured.errors, measured.late_ms
    return [Result(f"{case} /{endpoint}", rate / 2, percentile(latencies[endpoint], 0.5), percentile(latencies[endpoint], 0.99),
                   errors, requests=len(latencies[endpoint]), client_late_p99_ms=percentile(late, 0.99) if late else None)
            for endpoint in ("mutate", "validate")]


def quartermaster_argv() -> list[str]:
    """The installed console script (what users run); `python -m webhook` when PYTHONPATH picks another checkout."""
    script = Path(sys.executable).parent / "quartermaster"
    return [str(script)] if script.exists() and not os.environ.get("PYTHONPATH") else [sys.executable, "-m", "webhook"]
