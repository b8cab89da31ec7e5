"""The open-loop client: requests sent at fixed times over kept-alive TLS connections, latency counted from
when each request was due (so a server that falls behind is charged for the wait: no coordinated omission).

Lean on purpose. The client shares the machine's two cores with the server it measures, and whatever it
spends per request, and every stall of its own, lands in the latencies of both servers measured. aiohttp's
client took ~0.5 ms of CPU per request, half a core at 1,000 req/s, and was itself late by milliseconds. Here
each connection is a bare asyncio protocol, requests are bytes built once, the response is read by its
Content-Length, and one pacing coroutine sends everything (no task per request). How late the client itself
sent each request is measured too (`late_ms`): what of a p99 is the instrument's, not the server's.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

HEAD_END = b"\r\n\r\n"


class ResponseError(Exception):
    """The warm-up went wrong: a connection's first request was not answered 200, or its connection was lost.
    (During the run the same things are counted as errors instead.)"""


@dataclass
class Latencies:
    by_endpoint: dict[str, list[float]] = field(default_factory=lambda: collections.defaultdict(list))  # ms from due
    errors: int = 0
    late_ms: list[float] = field(default_factory=list)  # how long after its due time each request was written


class _Connection(asyncio.Protocol):
    """One kept-alive connection, one request at a time."""

    def __init__(self, done: "Paced | _Once") -> None:
        self.done = done  # told of each answer and of the connection's end
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.current: tuple[str, float] | None = None  # endpoint, due time of the request in flight

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def send(self, endpoint: str, due: float, request: bytes) -> None:
        self.current = (endpoint, due)
        assert self.transport is not None
        self.transport.write(request)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        end = self.buffer.find(HEAD_END)
        if end < 0:
            return
        length = _content_length(bytes(self.buffer[:end]))
        if length is None:
            self._fail()
            return
        if len(self.buffer) < end + 4 + length:
            return
        ok = self.buffer.startswith(b"HTTP/1.1 200 ")
        del self.buffer[:end + 4 + length]
        current, self.current = self.current, None
        if current is not None:
            self.done.answered(self, current[0], current[1], ok)

    def connection_lost(self, exc: Exception | None) -> None:
        current, self.current = self.current, None
        self.done.closed(self, current[0] if current else None)

    def _fail(self) -> None:
        """An answer this client cannot read: the connection goes, and connection_lost counts the request."""
        if self.transport is not None:
            self.transport.abort()


def _content_length(head: bytes) -> int | None:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                return int(value.strip())
            except ValueError:
                return None
    return None


class Paced:
    """`rate` requests a second for `seconds`, cycling through `bodies` ((endpoint, JSON bytes)), over at most
    `connections` connections; a request due while every connection is busy waits for the first one free, and
    that wait is part of its latency (aiohttp's pooled client, which this replaces, did the same)."""

    def __init__(self, base: str, ca: Path, bodies: list[tuple[str, bytes]], connections: int = 64) -> None:
        url = urlsplit(base)
        self.host, self.port = url.hostname or "127.0.0.1", url.port or 443
        self.context = ssl.create_default_context(cafile=str(ca))
        self.requests = [(endpoint, b"POST /%s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                          b"Content-Length: %d\r\n\r\n%s" % (endpoint.encode(), self.host.encode(), self.port, len(body), body))
                         for endpoint, body in bodies]
        self.connections = connections
        self.idle: collections.deque[_Connection] = collections.deque()
        self.waiting: collections.deque[tuple[int, float]] = collections.deque()  # (index, due): no connection free
        self.result = Latencies()
        self.outstanding = 0
        self.alive = 0  # connections not lost
        self.finished: asyncio.Future[None] | None = None

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        _, connection = await loop.create_connection(lambda: _Connection(self), self.host, self.port, ssl=self.context)
        return connection  # connected, handshake done

    async def run(self, rate: float, seconds: float) -> Latencies:
        loop = asyncio.get_running_loop()
        self.finished = loop.create_future()
        opened: list[_Connection] = []
        try:
            # the connections first, each used once (TLS handshakes are not what this measures)
            made = await asyncio.gather(*(self._connect() for _ in range(self.connections)), return_exceptions=True)
            opened += [c for c in made if isinstance(c, _Connection)]
            failed = next((e for e in made if isinstance(e, BaseException)), None)
            if failed is not None:
                raise failed
            self.alive = len(opened)
            for i, connection in enumerate(opened):
                await self._warm(connection, i)
            self.idle.extend(opened)
            total = int(rate * seconds)
            self.outstanding = total
            start = time.perf_counter() + 0.05
            for i in range(total):
                due = start + i / rate
                wait = due - time.perf_counter()
                if wait > 0:
                    await asyncio.sleep(wait)
                self._dispatch(i, due)
            if total:
                await self.finished
            return self.result
        finally:  # whatever ended the run (a refused warm-up, too): the server is left no connection
            for connection in opened:
                if connection.transport is not None:
                    connection.transport.close()

    async def _warm(self, connection: _Connection, i: int) -> None:
        warmed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        connection.done = _Once(warmed)
        connection.send(*self._request(i, time.perf_counter()))
        await warmed
        connection.done = self

    def _request(self, i: int, due: float) -> tuple[str, float, bytes]:
        endpoint, data = self.requests[i % len(self.requests)]
        return endpoint, due, data

    def _dispatch(self, i: int, due: float) -> None:
        if self.idle:
            self.result.late_ms.append((time.perf_counter() - due) * 1000)
            self.idle.popleft().send(*self._request(i, due))
        elif self.alive:
            self.waiting.append((i, due))
        else:  # every connection is gone: nothing to send it on
            self.result.errors += 1
            self._settle()

    def answered(self, connection: _Connection, endpoint: str, due: float, ok: bool) -> None:
        now = time.perf_counter()
        if ok:
            self.result.by_endpoint[endpoint].append((now - due) * 1000)
        else:
            self.result.errors += 1
        self._next(connection)

    def closed(self, connection: _Connection, endpoint: str | None) -> None:
        """A connection went (the server closed it, or an answer could not be read); `endpoint`: of the request
        it took with it, an error."""
        self.alive -= 1
        if connection in self.idle:
            self.idle.remove(connection)
        if endpoint is not None:
            self.result.errors += 1
            self._settle()
        if not self.alive:  # nothing left to send the waiting ones on: each is an error
            while self.waiting:
                self.waiting.popleft()
                self.result.errors += 1
                self._settle()

    def _next(self, connection: _Connection) -> None:
        if self.waiting:
            i, due = self.waiting.popleft()
            connection.send(*self._request(i, due))
        else:
            self.idle.append(connection)
        self._settle()

    def _settle(self) -> None:
        self.outstanding -= 1
        if self.outstanding == 0 and self.finished is not None and not self.finished.done():
            self.finished.set_result(None)


class _Once:
    """The warm-up answer of a connection: resolves a future, records nothing."""

    def __init__(self, future: asyncio.Future[None]) -> None:
        self.future = future

    def answered(self, connection: _Connection, endpoint: str, due: float, ok: bool) -> None:
        if self.future.done():
            return
        if not ok:
            self.future.set_exception(ResponseError(f"warm-up request to /{endpoint} was not answered 200"))
        else:
            self.future.set_result(None)

    def closed(self, connection: _Connection, endpoint: str | None) -> None:
        if not self.future.done():
            self.future.set_exception(ResponseError(f"connection lost during the warm-up request to /{endpoint}"))
