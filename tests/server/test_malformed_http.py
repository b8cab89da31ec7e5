"""Malformed HTTP that reaches aiohttp's parser: anyone who reaches the port can send it, so each one is a
quiet line at most (reason, peer; rate-limited), never an error traceback, and it is counted."""

import asyncio
import logging
import re
import ssl

import pytest

from tests.kinds import REQUIRE_TEAM, test_registry
from tests.support import connect, policy_dir, running_server
from webhook.server.limits import ServerLimits

FAST = ServerLimits(handshake_seconds=2, header_seconds=1.0, body_seconds=1.0, idle_seconds=2.0, request_seconds=5,
                    tick_seconds=0.1, refusal_delay_seconds=0.0)

# each refused by aiohttp's parser (the fast lane hands anything outside its grammar to aiohttp)
MALFORMED = [
    b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Length: 12abc\r\n\r\n",
    b"POST /validate HTTP/1.1\r\nHost: localhost\r\nBad Header: x\r\nContent-Length: 0\r\n\r\n",
    b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX: " + b"a" * 9000 + b"\r\n\r\n",
    b"POST /validate HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"GET /healthz HTTP/9.9\r\nHost: localhost\r\n\r\n",
    b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
]
ROUNDS = 5  # each malformed request is sent this many times


@pytest.fixture
def policies(tmp_path):
    return policy_dir(tmp_path / "policies", {"require.yaml": REQUIRE_TEAM})


async def _send(server, data: bytes) -> bytes:
    reader, writer = await connect(server)
    writer.write(data)
    await writer.drain()
    try:
        answer = await asyncio.wait_for(reader.read(), 30)
    except (ConnectionError, ssl.SSLError):
        answer = b""
    writer.close()
    return answer


def _refused_total(metrics: str) -> float:
    return sum(float(m.group(1)) for m in re.finditer(
        r'^quartermaster_malformed_requests_total\{endpoint="http",status="4\d\d"\} (\S+)$', metrics, re.M))


async def test_malformed_http_is_one_quiet_counted_line_at_most(policies, tmp_path, caplog):
    sent = 0
    with caplog.at_level(logging.DEBUG):
        async with running_server(policies, tmp_path, registry=test_registry(), limits=FAST) as server:
            for _ in range(ROUNDS):
                for data in MALFORMED:
                    answer = await _send(server, data)
                    assert re.match(rb"HTTP/1\.[01] 4", answer), (data[:60], answer[:80])
                    sent += 1
            metrics = (await server.get("/metrics"))[1]
            assert _refused_total(metrics) == sent, metrics
            assert (await server.get("/healthz"))[0] == 200
    records = [r for r in caplog.records if r.name.startswith(("aiohttp", "webhook.server"))]
    assert not [r for r in records if r.exc_info], [r.getMessage()[:200] for r in records if r.exc_info]
    assert not [r for r in records if r.levelno >= logging.ERROR], [r.getMessage()[:200] for r in records]
    lines = [r for r in records if "malformed HTTP" in r.getMessage()]
    assert 0 < len(lines) <= len(MALFORMED), [r.getMessage() for r in lines]  # rate-limited: once per reason
    assert all("\n" not in r.getMessage() and "127.0.0.1" in r.getMessage() for r in lines)
