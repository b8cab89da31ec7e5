"""load-tests/paced.py, the suite's open-loop client: what it counts as a latency, an error and its own lateness.

Against the real server for answers, and against a scripted HTTP/1.1 responder over real TLS for the ways a
server can fail it (non-200 answers, connections that close)."""

from __future__ import annotations

import asyncio
import json
import ssl
from pathlib import Path

import pytest

from tests.support import REPO, load_tests_module, running_server
from webhook.certs.generate import CertPaths, ensure_certificates


def _paced():
    return load_tests_module("paced")


def _review(uid: str) -> bytes:
    review = json.loads((REPO / "examples" / "review-gpu-pod.json").read_text())
    review["request"]["uid"] = uid
    return json.dumps(review).encode()


async def test_every_request_is_answered_and_timed_from_when_it_was_due(tmp_path: Path) -> None:
    paced = _paced()
    async with running_server(REPO / "policies", tmp_path, state=REPO / "examples" / "state") as server:
        bodies = [("mutate", _review("u-1")), ("validate", _review("u-2"))]
        client = paced.Paced(server.url, server.ca, bodies, connections=4)
        result = await asyncio.wait_for(client.run(rate=200, seconds=0.5), 30)
    assert result.errors == 0
    # 100 requests due, alternating between the two bodies
    assert len(result.by_endpoint["mutate"]) == 50 and len(result.by_endpoint["validate"]) == 50
    latencies = result.by_endpoint["mutate"] + result.by_endpoint["validate"]
    assert all(ms > 0 for ms in latencies)
    # written at or after its due time, never before (a request sent early would look faster than it was)
    assert 0 < len(result.late_ms) <= 100 and all(ms >= 0 for ms in result.late_ms)


class _Scripted:
    """HTTP/1.1 over TLS: each connection answers its first request (the client's warm-up) with `first`, the
    later ones with `then`; after `answers` answers it closes the connection instead."""

    def __init__(self, first: int = 200, then: int = 200, answers: int | None = None) -> None:
        self.first, self.then, self.answers = first, then, answers

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        answered = 0
        try:
            while self.answers is None or answered < self.answers:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))
                await reader.readexactly(length)
                body = b'{"error": "scripted"}'
                writer.write(b"HTTP/1.1 %d Scripted\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                             % (self.then if answered else self.first, len(body), body))
                await writer.drain()
                answered += 1
            await reader.readuntil(b"\r\n\r\n")  # the next request comes, and the connection closes under it
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def _scripted_run(tmp_path: Path, script: _Scripted, rate: float, seconds: float, connections: int):
    paced = _paced()
    ensure_certificates(tmp_path, ["localhost", "127.0.0.1"])
    paths = CertPaths(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(paths.cert, paths.key)
    server = await asyncio.start_server(script.handle, "127.0.0.1", 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    try:
        client = paced.Paced(f"https://127.0.0.1:{port}", paths.ca_cert, [("validate", b"{}")], connections=connections)
        return await asyncio.wait_for(client.run(rate=rate, seconds=seconds), 30)
    finally:
        server.close()
        await server.wait_closed()


async def test_answers_other_than_200_are_errors_not_latencies(tmp_path: Path) -> None:
    result = await _scripted_run(tmp_path, _Scripted(then=500), rate=100, seconds=0.3, connections=2)
    assert result.errors == 30
    assert not result.by_endpoint["validate"]


async def test_a_refused_warm_up_ends_the_run_and_says_so(tmp_path: Path) -> None:
    # a server that does not answer the suite's reviews with 200 measures nothing worth a number
    with pytest.raises(_paced().ResponseError, match="warm-up request to /validate was not answered 200"):
        await _scripted_run(tmp_path, _Scripted(first=500), rate=100, seconds=0.3, connections=2)


async def test_connections_that_close_end_the_run_with_every_request_an_error(tmp_path: Path) -> None:
    # each connection answers its warm-up request and closes on the next: no request of the run is answered,
    # and the ones still waiting for a connection when the last one goes are errors too (the run ends, no hang)
    result = await _scripted_run(tmp_path, _Scripted(answers=1), rate=200, seconds=0.25, connections=3)
    assert result.errors == 50
    assert not result.by_endpoint["validate"]


@pytest.mark.parametrize("head", [b"HTTP/1.1 200 OK\r\nContent-Length: x1\r\n",
                                  b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"])
def test_a_response_without_a_readable_length_has_none(head: bytes) -> None:
    assert _paced()._content_length(head) is None
