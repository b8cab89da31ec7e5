"""The HTTPS listener: aiohttp's protocol behind the connection guard, plus the watchdogs.

The asyncio server is created here rather than through aiohttp's TCPSite, because the guard must wrap
the protocol factory and the TLS handshake needs its own deadline; aiohttp's runner still owns the
handlers and drains in-flight requests on shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from typing import Any

from aiohttp import web

from webhook.observability.metrics import Metrics
from webhook.server.guard import GUARD, ConnectionGuard
from webhook.server.limits import ServerLimits

log = logging.getLogger(__name__)


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
        self._runner = web.AppRunner(app, shutdown_timeout=10.0, access_log=None, keepalive_timeout=limits.idle_seconds)
        self._server: asyncio.AbstractServer | None = None
        self._tasks: list[asyncio.Task[Any]] = []

    async def start(self) -> None:
        await self._runner.setup()
        loop = asyncio.get_running_loop()
        factory = self.guard.factory(self._runner.server)  # type: ignore[arg-type]
        self._server = await loop.create_server(factory, self.host, self.port, ssl=self.ssl_context, backlog=512,
                                                ssl_handshake_timeout=self.limits.handshake_seconds)
        self._tasks = [asyncio.create_task(self.guard.watch(), name="connection-watchdog"),
                       asyncio.create_task(watch_loop_lag(self.metrics, self.limits.tick_seconds), name="loop-lag")]

    async def stop(self) -> None:
        """Stop accepting, let in-flight reviews finish (aiohttp's drain), then stop the watchdogs."""
        if self._server is not None:
            self._server.close()
        await self._runner.cleanup()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

