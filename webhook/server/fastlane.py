"""The admission fast lane: plain POSTs to /mutate and /validate answered below aiohttp's request machinery.

Profiled under load (wrk, TLS, uvloop), aiohttp's Request and Response objects, router, header multidicts and
writer were a large share of every review's CPU: a raw asyncio protocol answering the no-op's reviews on the same
loop took far less CPU per review than aiohttp's no-op (docs/performance.md). The API server sends nothing but such
POSTs, each an HTTP/1.1 request with a Content-Length, so this lane reads exactly those: the request line and
headers are checked against the grammar in one regular expression, the body is taken by its length, and the
answer comes from the same `AdmissionEndpoint` aiohttp's handler calls, so the two lanes cannot differ in
what they decide, count, log or say.

Anything else goes to aiohttp, with every byte the lane holds, and the connection stays there: another method
or path, HTTP/1.0, Transfer-Encoding, Expect, Content-Encoding, Upgrade, a missing or repeated Content-Length or Host,
a body over 3 MiB, a header block past 8 KiB or a byte outside the grammar; and every connection without a
client certificate when one is required. aiohttp answers those as it always did (404, 405, 413, 400, its
100-continue and chunked bodies).

What aiohttp did for these requests, the lane does the same way: the connection guard hears when a request
starts and ends (its deadlines are unchanged), a body that stalls gets a 408 after `body_seconds` and the
connection is closed, pipelined requests are answered in order one at a time, and shutdown finishes the
reviews in flight before the listener closes. A connection holding one largest request unanswered (a client
sending faster than it is answered, or not reading its answers) is not read further until there is room.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import re
import time
from http import HTTPStatus
from typing import Any, Callable
from urllib.parse import parse_qsl

from webhook.model.quickinit import frozen_dataclass
from webhook.server.guard import ConnectionGuard
from webhook.server.handlers import (BODY_CUT_REASON, INTERNAL_ERROR, MAX_BODY, AdmissionEndpoint, body_timeout_reason,
                                     json_bytes)

log = logging.getLogger(__name__)

MAX_HEAD = 8192  # request line and headers; aiohttp's own limit per line is 8190 bytes
MAX_HEADERS = 100  # aiohttp refuses more than 128; a review carries about ten
# what one connection may hold unanswered before the lane stops reading it: a whole largest request
MAX_BUFFERED = MAX_BODY + MAX_HEAD

_TOKEN = rb"[!#$%&'*+.^_`|~0-9A-Za-z-]++"
# possessive everywhere: a head that does not match fails in one pass, however it was built
_HEAD = re.compile(rb"POST /(mutate|validate)(?:\?([!$&'()*+,\-./0-9:;=?@A-Z_a-z~%]*+))? HTTP/1\.1"
                   rb"((?:\r\n" + _TOKEN + rb":[\t\x20-\x7e\x80-\xff]*+)*+)")
# the fields the lane reads (the head matched _HEAD, so a name ends at its colon): Host must be there once, as
# aiohttp's parser requires; transfer-encoding, expect, content-encoding and upgrade change how the request is
# framed or answered, and the lane leaves requests with them to aiohttp; the last six are the rest of aiohttp's
# singleton fields (http_parser.SINGLETON_HEADERS), which its parser refuses when repeated, so the lane does too
_FIELD = re.compile(rb"\r\n(content-length|connection|host|transfer-encoding|expect|content-encoding|upgrade"
                    rb"|content-type|user-agent|content-location|content-range|etag|max-forwards|server):([^\r]*+)",
                    re.IGNORECASE)
_SINGLETONS = frozenset({b"content-type", b"user-agent", b"content-location", b"content-range", b"etag",
                         b"max-forwards", b"server"})
_STATUS = {status.value: b"%d %s" % (status.value, status.phrase.encode()) for status in HTTPStatus}
_INTERNAL = json_bytes({"error": INTERNAL_ERROR})


class _Date:
    """The Date header (RFC 9110 requires one from a server with a clock), formatted once a second."""

    def __init__(self) -> None:
        self._second = -1
        self._text = b""

    def __call__(self) -> bytes:
        now = int(time.time())
        if now != self._second:
            self._second, self._text = now, email.utils.formatdate(now, usegmt=True).encode()
        return self._text


_date = _Date()


def response_bytes(status: int, body: bytes, close: bool) -> bytes:
    return b"".join((b"HTTP/1.1 ", _STATUS[status], b"\r\nContent-Type: application/json\r\nContent-Length: ",
                     str(len(body)).encode(), b"\r\nDate: ", _date(),
                     b"\r\nConnection: close\r\n\r\n" if close else b"\r\n\r\n", body))


@frozen_dataclass(dict_init=True)
class Head:
    """A request the lane answers: which endpoint, the URL's ?timeout=, how long its body is, whether the
    connection closes after it."""

    endpoint: str
    timeout: str | None
    length: int
    close: bool


def parse_head(head: bytes) -> Head | None:
    """The request line and headers (without the blank line), or None when aiohttp must read them."""
    matched = _HEAD.fullmatch(head)
    if matched is None:
        return None
    endpoint, query, fields = matched.groups()
    if fields.count(b"\r\n") > MAX_HEADERS:
        return None
    length: int | None = None
    close = False
    hosts = 0
    seen: set[bytes] = set()
    for name, value in _FIELD.findall(fields):
        name = name.lower()
        if name in _SINGLETONS:
            if name in seen:
                return None  # aiohttp answers it a 400
            seen.add(name)
        elif name == b"host":
            hosts += 1
        elif name == b"content-length":
            value = value.strip(b" \t")
            if length is not None or not (value.isdigit() and len(value) <= 8):
                return None  # repeated, signed, empty or huge: aiohttp refuses it or reads it its own way
            length = int(value)
        elif name == b"connection":
            tokens = {token.strip(b" \t") for token in value.lower().split(b",")}
            if not tokens <= {b"keep-alive", b"close"}:
                return None
            close = close or b"close" in tokens  # a close in any Connection field closes
        else:
            return None
    if length is None or length > MAX_BODY or hosts != 1:
        return None
    return Head(endpoint.decode("ascii"), _timeout(query) if query else None, length, close)


def _timeout(query: bytes) -> str | None:
    """The first timeout= of the query, as aiohttp's request.query would give it."""
    if b"%" in query or b"+" in query:
        pairs = parse_qsl(query.decode("ascii"), keep_blank_values=True)
        return next((value for key, value in pairs if key == "timeout"), None)
    for pair in query.split(b"&"):
        key, _, value = pair.partition(b"=")
        if key == b"timeout":
            return value.decode("ascii")
    return None


class FastLane:
    """Shared by a listener's connections: the endpoints, the guard, and the reviews in flight."""

    def __init__(self, endpoints: dict[str, AdmissionEndpoint], guard: ConnectionGuard, client_cert_required: bool,
                 fallback: Callable[[], asyncio.Protocol]) -> None:
        self.endpoints = endpoints  # their limits bound a body's arrival, as in aiohttp's handler
        self.guard = guard
        self.client_cert_required = client_cert_required
        self.fallback = fallback  # aiohttp's protocol factory
        self.in_flight: set[asyncio.Task[Any]] = set()
        self.connections: set[LaneProtocol] = set()
        self.closing = False

    def factory(self) -> Callable[[], asyncio.Protocol]:
        return lambda: LaneProtocol(self)

    def spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self.in_flight.add(task)
        task.add_done_callback(self.in_flight.discard)

    async def shutdown(self, timeout: float) -> None:
        """Start nothing new, close idle connections, and give the reviews in flight `timeout` seconds."""
        self.closing = True
        for connection in list(self.connections):
            connection.close_when_idle()
        if self.in_flight:
            _, late = await asyncio.wait(set(self.in_flight), timeout=timeout)
            for task in late:
                task.cancel()
        for connection in list(self.connections):
            connection.abort()


class LaneProtocol(asyncio.Protocol):
    """One connection: answered here until something needs aiohttp, then aiohttp's protocol for good."""

    def __init__(self, lane: FastLane) -> None:
        self.lane = lane
        self.transport: Any = None
        self.inner: asyncio.Protocol | None = None  # aiohttp's, once handed over
        # appended to and consumed from the front, both amortized O(1): a body trickling in a byte at a time
        # costs no more than one arriving whole
        self.buffer = bytearray()
        self.busy = False  # a request taken from the buffer is being answered
        self.waiting: Head | None = None  # headers in, body not yet
        self.body_timer: asyncio.TimerHandle | None = None
        self.write_paused = False
        self.read_paused = False
        self.closing = False

    # --- asyncio's callbacks -----------------------------------------------------------------------
    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        lane = self.lane
        if lane.client_cert_required and not transport.get_extra_info("peercert"):
            self._hand_over()  # aiohttp answers it the 401
            return
        lane.connections.add(self)

    def data_received(self, data: bytes) -> None:
        if self.inner is not None:
            self.inner.data_received(data)
            return
        self.buffer += data
        if self.waiting is not None:
            self._body_arrived(self.waiting)
        elif not self.busy:
            self._next()
        if len(self.buffer) > MAX_BUFFERED and not self.read_paused and self.inner is None:
            # a client sending faster than it is answered (or than it reads its answers) waits for us
            self.read_paused = True
            self.transport.pause_reading()

    def eof_received(self) -> bool | None:
        return self.inner.eof_received() if self.inner is not None else None

    def connection_lost(self, exc: Exception | None) -> None:
        if self.inner is not None:
            self.inner.connection_lost(exc)
            return
        self.lane.connections.discard(self)
        if self.body_timer is not None:
            self.body_timer.cancel()
        if self.waiting is not None:  # the client left mid-body, as aiohttp's handler counts it
            self.lane.spawn(self.lane.endpoints[self.waiting.endpoint].refuse(400, BODY_CUT_REASON))
            self.waiting = None

    def pause_writing(self) -> None:
        self.write_paused = True
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.write_paused = False
        if self.inner is not None:
            self.inner.resume_writing()
        elif not self.busy:
            self._next()
            self._read_if_room()

    # --- the lane ----------------------------------------------------------------------------------
    def _next(self) -> None:
        """Take the next request from the buffer: answer it, wait for its body, or hand over."""
        if self.write_paused or self.closing or self.transport.is_closing():
            return
        buffer = self.buffer
        if not buffer:
            return
        if self.lane.closing:
            self.close_when_idle()
            return
        end = buffer.find(b"\r\n\r\n", 0, MAX_HEAD + 4)
        if end < 0:
            if len(buffer) > MAX_HEAD:
                self._hand_over()
            return
        head = parse_head(bytes(buffer[:end]))
        if head is None:
            self._hand_over()
            return
        del buffer[:end + 4]
        self.busy = True
        self.lane.guard.request_started(self.transport)
        self._body_arrived(head)

    def _body_arrived(self, head: Head) -> None:
        buffer = self.buffer
        if len(buffer) < head.length:
            if self.waiting is None:
                self.waiting = head
                seconds = self.lane.endpoints[head.endpoint].limits.body_seconds
                self.body_timer = asyncio.get_running_loop().call_later(seconds, self._body_overdue)
            return
        if self.body_timer is not None:
            self.body_timer.cancel()
            self.body_timer = None
        self.waiting = None
        body = bytes(buffer[:head.length])
        del buffer[:head.length]
        self.lane.spawn(self._answer(head, body))

    def _body_overdue(self) -> None:
        head, self.waiting, self.body_timer = self.waiting, None, None
        if head is not None:
            # the rest of a stalled body is not worth waiting for, and what follows is no next request
            self.closing = True
            self.lane.spawn(self._refuse_and_close(head, 408, body_timeout_reason(self.lane.endpoints[head.endpoint].limits)))

    async def _refuse_and_close(self, head: Head, status: int, reason: str) -> None:
        body = await self.lane.endpoints[head.endpoint].refuse(status, reason)
        if not self.transport.is_closing():
            self.transport.write(response_bytes(status, body, close=True))
            self.transport.close()
        self._finished()

    async def _answer(self, head: Head, body: bytes) -> None:
        started = time.perf_counter()
        try:
            status, payload = await self.lane.endpoints[head.endpoint].answer(body, head.timeout, started)
        except Exception:  # a bug costs one request (a 500 the failure policy handles), never the server
            log.exception("unhandled error on /%s", head.endpoint)
            status, payload = 500, _INTERNAL
        transport = self.transport
        close = head.close or self.lane.closing
        if close:
            self.closing = True
        if not transport.is_closing():
            transport.write(response_bytes(status, payload, close))
            if close:
                transport.close()
        self._finished()
        self._next()
        self._read_if_room()

    def _read_if_room(self) -> None:
        if (self.read_paused and not self.closing and self.inner is None and not self.transport.is_closing()
                and len(self.buffer) <= MAX_BUFFERED):
            self.read_paused = False
            self.transport.resume_reading()

    def _finished(self) -> None:
        self.lane.guard.request_finished(self.transport)
        self.busy = False

    def _hand_over(self) -> None:
        """From here on aiohttp's protocol reads this connection, starting with what the lane holds."""
        self.lane.connections.discard(self)
        inner = self.inner = self.lane.fallback()
        inner.connection_made(self.transport)
        if self.write_paused:
            inner.pause_writing()
        if self.read_paused:
            self.read_paused = False
            self.transport.resume_reading()
        data, self.buffer = bytes(self.buffer), bytearray()
        if data:
            inner.data_received(data)

    def close_when_idle(self) -> None:
        self.closing = True
        if not self.busy and self.waiting is None:
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.abort()
