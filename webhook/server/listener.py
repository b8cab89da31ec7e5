"""The HTTPS listener: the admission fast lane and aiohttp's protocol behind the connection guard, plus the watchdogs.

The asyncio server is created here rather than through aiohttp's TCPSite, because the guard must wrap
the protocol factory and the TLS handshake needs its own deadline. Each connection starts in the fast
lane (`fastlane.py`), which hands it to aiohttp's protocol for anything but a plain admission POST;
aiohttp's runner owns the routes and drains its in-flight requests on shutdown, the lane drains its own.
`QUARTERMASTER_FAST_LANE=0` leaves every connection to aiohttp (docs/fast-paths.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import ssl
from typing import Any

from aiohttp import web

from webhook.observability.metrics import Metrics
from webhook.server.fastlane import FastLane
from webhook.server.guard import ADMISSION, CLIENT_CERT_REQUIRED, GUARD, ConnectionGuard
from webhook.server.limits import ServerLimits
from webhook.server.parse_errors import ParserRefusalLog

log = logging.getLogger(__name__)

SHUTDOWN_SECONDS = 10.0  # for reviews in flight when the listener stops
FAST_LANE_VARIABLE = "QUARTERMASTER_FAST_LANE"


def fast_lane_enabled() -> bool:
    """The operator's switch: 0 (or false, off) sends every request through aiohttp's own parser."""
    return os.environ.get(FAST_LANE_VARIABLE, "1").strip().lower() not in ("0", "false", "off", "no")


async def watch_loop_lag(metrics: Metrics, period: float) -> None:
    """How late a timer fires is how long something held the event loop: every request waits that long."""
    loop = asyncio.get_running_loop()
    while True:
        started = loop.time()
        await asyncio.sleep(period)
        metrics.loop_lag(max(0.0, loop.time() - started - period))


class Listener:
    def __init__(self, app: web.Application, host: str, port: int, ssl_context: ssl.SSLContext,
                 limits: ServerLimits, metrics: Metrics) -> None:
        self.app = app
        self.host, self.port = host, port
        self.ssl_context = ssl_context
        self.limits = limits
        self.metrics = metrics
        self.guard: ConnectionGuard = app[GUARD]
        # logger: what aiohttp's parser refuses is one quiet counted line, not an error traceback
        self._runner = web.AppRunner(app, shutdown_timeout=SHUTDOWN_SECONDS, access_log=None,
                                     keepalive_timeout=limits.idle_seconds, logger=ParserRefusalLog(metrics))
        self._server: asyncio.AbstractServer | None = None
        self.lane: FastLane | None = None
        self._tasks: list[asyncio.Task[Any]] = []

    async def start(self) -> None:
        await self._runner.setup()
        loop = asyncio.get_running_loop()
        inner: Any = self._runner.server  # aiohttp's protocol factory
        if fast_lane_enabled():
            self.lane = FastLane(self.app[ADMISSION], self.guard, self.app[CLIENT_CERT_REQUIRED], fallback=inner)
            inner = self.lane.factory()
        else:
            log.info("fast lane off (%s=0): every request goes through aiohttp", FAST_LANE_VARIABLE)
        factory = self.guard.factory(inner)
        self._server = await loop.create_server(factory, self.host, self.port, ssl=self.ssl_context, backlog=512,
                                                ssl_handshake_timeout=self.limits.handshake_seconds)
        self._tasks = [asyncio.create_task(self.guard.watch(), name="connection-watchdog"),
                       asyncio.create_task(watch_loop_lag(self.metrics, self.limits.tick_seconds), name="loop-lag")]

    async def stop(self) -> None:
        """Stop accepting, let in-flight reviews finish (the lane's and aiohttp's drains), then stop the watchdogs."""
        if self._server is not None:
            self._server.close()
        if self.lane is not None:
            await asyncio.gather(self.lane.shutdown(SHUTDOWN_SECONDS), self._runner.cleanup())
        else:
            await self._runner.cleanup()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
