"""Per-connection deadlines and a cap on open connections, below aiohttp.

aiohttp has no deadline for a request's headers (a client that sends half a request line is kept
forever) and keeps idle connections for an hour by default. The guard sits between the listener and
aiohttp's protocol: it sees every connection open, every byte arrive and every connection close, and
the handler tells it when a request starts and ends. A watchdog closes what overstays its phase:

| phase                          | closed after                                  |
|--------------------------------|-----------------------------------------------|
| waiting for the first request  | header_seconds (connected, said nothing)      |
| idle between requests          | idle_seconds (keep-alive)                     |
| a request's headers arriving   | header_seconds from its first byte            |
| a request in the handler       | request_seconds (the body has its own deadline in the handler) |

Closing is `abort()`: a stalled peer gets no graceful TLS shutdown to stall on as well.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from dataclasses import dataclass
from typing import Any, Callable

from aiohttp import web

from webhook.server.limits import ServerLimits

log = logging.getLogger(__name__)


class GuardPhase(enum.Enum):
    WAITING = "waiting"  # no byte of a next request yet
    HEADERS = "headers"  # bytes of a request arrived, the handler has not started
    ACTIVE = "active"  # the handler runs


@dataclass
class Connection:
    transport: Any
    phase: GuardPhase
    since: float
    served: int = 0


class _GuardedProtocol(asyncio.Protocol):
    """Forwards every protocol callback to aiohttp's own protocol, telling the guard first."""

    def __init__(self, guard: "ConnectionGuard", inner: asyncio.Protocol) -> None:
        self.guard = guard
        self.inner = inner
        self.connection: Connection | None = None

    def connection_made(self, transport: Any) -> None:
        self.connection = self.guard.opened(transport)
        if self.connection is None:
            transport.abort()  # over the cap with every connection busy: aiohttp never sees this one
            return
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.connection is not None:
            self.guard.received(self.connection)
            self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received() if self.connection is not None else None

    def connection_lost(self, exc: Exception | None) -> None:
        if self.connection is not None:
            self.guard.closed(self.connection)
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.connection is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.connection is not None:
            self.inner.resume_writing()


class ConnectionGuard:
    """Used from the event loop thread only."""

    def __init__(self, limits: ServerLimits, on_close: Callable[[str], None] | None = None) -> None:
        self.limits = limits
        self.on_close = on_close or (lambda reason: None)
        self._open: dict[Any, Connection] = {}

    # the monotonic clock itself, not the running loop's: asking for the running loop costs a getpid()
    # system call, and this runs three times per request
    _now = staticmethod(time.monotonic)

    @property
    def open_connections(self) -> int:
        return len(self._open)

    def factory(self, inner: Callable[[], asyncio.Protocol]) -> Callable[[], asyncio.Protocol]:
        return lambda: _GuardedProtocol(self, inner())

    # --- called by the protocol --------------------------------------------------------------------
    def opened(self, transport: Any) -> Connection | None:
        if len(self._open) >= self.limits.max_connections and not self._evict_one():
            self.on_close("refused")
            return None
        connection = Connection(transport, GuardPhase.WAITING, self._now())
        self._open[transport] = connection
        return connection

    def received(self, connection: Connection) -> None:
        if connection.phase is GuardPhase.WAITING:
            connection.phase, connection.since = GuardPhase.HEADERS, self._now()

    def closed(self, connection: Connection) -> None:
        self._open.pop(connection.transport, None)

    # --- called by the handler ---------------------------------------------------------------------
    def request_started(self, transport: Any) -> None:
        connection = self._open.get(transport)
        if connection is not None:
            connection.phase, connection.since = GuardPhase.ACTIVE, self._now()

    def request_finished(self, transport: Any) -> None:
        connection = self._open.get(transport)
        if connection is not None:
            connection.phase, connection.since = GuardPhase.WAITING, self._now()
            connection.served += 1

    # --- the watchdog ------------------------------------------------------------------------------
    def _deadline(self, connection: Connection) -> tuple[float, str]:
        if connection.phase is GuardPhase.ACTIVE:
            return self.limits.request_seconds, "request-timeout"
        if connection.phase is GuardPhase.HEADERS or connection.served == 0:
            return self.limits.header_seconds, "header-timeout"
        return self.limits.idle_seconds, "idle-timeout"

    def _close(self, connection: Connection, reason: str) -> None:
        self._open.pop(connection.transport, None)
        connection.transport.abort()
        self.on_close(reason)

    def _evict_one(self) -> bool:
        """At the cap: close the connection that has waited longest without a request in progress."""
        waiting = [c for c in self._open.values() if c.phase is not GuardPhase.ACTIVE]
        if not waiting:
            return False
        self._close(min(waiting, key=lambda c: c.since), "evicted")
        return True

    def sweep(self) -> int:
        """Close every connection past its phase's deadline; returns how many."""
        now = self._now()
        overdue = []
        for connection in self._open.values():
            limit, reason = self._deadline(connection)
            if now - connection.since > limit:
                overdue.append((connection, reason))
        for connection, reason in overdue:
            log.info("closing a connection: %s", reason)
            self._close(connection, reason)
        return len(overdue)

    async def watch(self) -> None:
        while True:
            await asyncio.sleep(self.limits.tick_seconds)
            try:
                self.sweep()
            except Exception:  # a dead watchdog would let stalled clients accumulate again
                log.exception("connection watchdog iteration failed; retrying")


GUARD = web.AppKey("guard", ConnectionGuard)
LIMITS = web.AppKey("limits", ServerLimits)
CLIENT_CERT_REQUIRED = web.AppKey("client_cert_required", bool)
ADMISSION = web.AppKey("admission", dict)  # "mutate", "validate": the AdmissionEndpoint of each
