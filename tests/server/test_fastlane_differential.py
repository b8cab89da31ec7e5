"""The fast lane against aiohttp's own parser, over whole connections (issue 41.2: a parser is a security surface).

The same bytes, arriving in any pieces, go to the lane's protocol (webhook/server/fastlane.py, with a recording
endpoint and transport) and to aiohttp's request parser, both its C and its Python form. Whatever the lane answers
itself, aiohttp frames the same way: the same requests in the same order, each with its endpoint, ?timeout= and
body, the connection kept or closed alike, and what the lane hands over is exactly the rest of the stream, which
aiohttp then reads as it always does. A request aiohttp refuses is never answered by the lane (both refuse it,
or the lane leaves it to aiohttp, which refuses it)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp.base_protocol import BaseProtocol
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.http_parser import HttpRequestParserC, HttpRequestParserPy
from aiohttp.streams import EmptyStreamReader
from hypothesis import HealthCheck, given, settings, strategies as st

from webhook.server.fastlane import FastLane
from webhook.server.limits import ServerLimits

PARSERS = [parser for parser in (HttpRequestParserC, HttpRequestParserPy) if parser is not None]
LIMITS = ServerLimits(body_seconds=30.0)


class _Endpoint:
    def __init__(self, name: str, answered: list[tuple[str, str | None, bytes]]) -> None:
        self.name, self.answered, self.limits = name, answered, LIMITS

    async def answer(self, body: bytes, timeout: str | None, started: float) -> tuple[int, bytes]:
        self.answered.append((self.name, timeout, body))
        return 200, b"{}"

    async def refuse(self, status: int, reason: str) -> bytes:
        return b"{}"


class _Guard:
    def request_started(self, transport: Any) -> None:
        pass

    def request_finished(self, transport: Any) -> None:
        pass


class _Transport:
    def __init__(self) -> None:
        self.closed = False

    def write(self, data: bytes) -> None:
        pass

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    abort = close

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default


class _Aiohttp(asyncio.Protocol):
    """Stands for aiohttp's protocol: what the lane hands over."""

    def __init__(self) -> None:
        self.received = bytearray()

    def data_received(self, data: bytes) -> None:
        self.received += data


async def _through_the_lane(pieces: list[bytes]) -> tuple[list[tuple[str, str | None, bytes]], bytes | None, bool, int, bool]:
    """What the lane answered, what it handed to aiohttp, whether it closed, how many bytes it took itself, and
    whether it waits for the rest of a body (its head among those bytes)."""
    answered: list[tuple[str, str | None, bytes]] = []
    handed: list[_Aiohttp] = []

    def fallback() -> _Aiohttp:
        handed.append(_Aiohttp())
        return handed[-1]

    lane = FastLane({name: _Endpoint(name, answered) for name in ("mutate", "validate")}, _Guard(),  # type: ignore[dict-item]
                    False, fallback)
    protocol = lane.factory()()
    transport = _Transport()
    protocol.connection_made(transport)
    fed = 0
    for piece in pieces:
        if transport.closed:
            break
        protocol.data_received(piece)
        fed += len(piece)
        for _ in range(4):  # the answers' tasks, and the next request they start
            await asyncio.sleep(0)
    while lane.in_flight:
        await asyncio.wait(set(lane.in_flight))
        await asyncio.sleep(0)
    handed_over = bytes(handed[0].received) if handed else None
    consumed = fed - len(handed_over) if handed_over is not None else fed - len(protocol.buffer)
    return answered, handed_over, transport.closed, consumed, protocol.waiting is not None


def _aiohttp_reads(parser_class: Any, data: bytes) -> tuple[list[tuple[Any, bytes]], bool]:
    """The messages aiohttp's parser frames in `data` (as its server sets it up), and whether it refused it."""
    loop = asyncio.new_event_loop()
    try:
        parser = parser_class(BaseProtocol(loop), loop, 2**16, max_line_size=8190, max_field_size=8190, max_headers=128)
        try:
            messages, _, _ = parser.feed_data(data)
        except HttpProcessingError:
            return [], True
        return [(message, b"" if isinstance(payload, EmptyStreamReader) else b"".join(payload._buffer))
                for message, payload in messages], False
    finally:
        loop.close()


_FIELDS = [b"Content-Type: application/json", b"Accept: application/json, */*", b"User-Agent: kube-apiserver-admission",
           b"Connection: keep-alive", b"Connection: close", b"Accept-Encoding: gzip", b"X-A: \xe9", b"X-B:"]
_NOISE = list(b"\r\n \t:;,=?&%/\x00\x7f\x80aZ09-_.")


@st.composite
def _request(draw: Any) -> bytes:
    endpoint = draw(st.sampled_from([b"/mutate", b"/validate"]))
    query = draw(st.sampled_from([b"", b"?timeout=10s", b"?timeout=5s&x=1", b"?x=%74&timeout=3s"]))
    body = draw(st.binary(max_size=40))
    fields = [b"Host: quartermaster.svc", b"Content-Length: %d" % len(body),
              *draw(st.lists(st.sampled_from(_FIELDS), max_size=3))]
    raw = bytearray(b"POST " + endpoint + query + b" HTTP/1.1\r\n" + b"\r\n".join(draw(st.permutations(fields)))
                    + b"\r\n\r\n" + body)
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):  # now and then a damaged byte anywhere
        at = draw(st.integers(0, len(raw) - 1))
        edit = draw(st.sampled_from(["insert", "delete", "replace"]))
        if edit == "delete":
            del raw[at]
        else:
            raw[at:at + (edit == "replace")] = bytes([draw(st.sampled_from(_NOISE))])
    return bytes(raw)


@st.composite
def _connection(draw: Any) -> tuple[bytes, list[bytes]]:
    stream = b"".join(draw(st.lists(_request(), min_size=1, max_size=4)))
    cuts = sorted(set(draw(st.lists(st.integers(0, len(stream)), max_size=6))))
    bounds = [0, *cuts, len(stream)]
    return stream, [stream[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


@pytest.mark.parametrize("parser_class", PARSERS, ids=lambda p: p.__name__)
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(connection=_connection())
def test_what_the_lane_answers_aiohttp_frames_the_same_and_the_rest_is_handed_over_whole(parser_class, connection):
    stream, pieces = connection
    answered, handed, closed, consumed, waiting = asyncio.run(_through_the_lane(pieces))
    if handed is not None:
        assert stream.endswith(handed)  # every byte the lane did not answer reaches aiohttp, in order
    # what the lane took itself (after a Connection: close, aiohttp too answers that request and reads no further)
    messages, refused = _aiohttp_reads(parser_class, stream[:consumed])
    if not answered:
        return
    assert not refused, "the lane answered a request aiohttp's parser refuses"
    assert len(messages) >= len(answered)
    for (endpoint, timeout, body), (message, payload) in zip(answered, messages):
        assert (message.method, message.version, message.url.path) == ("POST", (1, 1), "/" + endpoint)
        assert not message.chunked and not message.upgrade
        assert message.url.query.get("timeout") == timeout
        assert payload == body
    # the lane stops at a message boundary, where aiohttp does (past it, the head of a body still arriving)
    assert len(messages) == len(answered) + waiting
    assert messages[len(answered) - 1][0].should_close == closed
