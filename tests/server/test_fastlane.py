"""The admission fast lane (webhook/server/fastlane.py) on the real HTTPS server, over real sockets: what it
answers itself, what it hands to aiohttp, and that both lanes answer a review with the same bytes.

The lane's responses carry no Server header and aiohttp's do: that is how these tests tell who answered."""

import asyncio
import base64
import json
import re

import jsonpatch
import pytest
from aiohttp.base_protocol import BaseProtocol
from aiohttp.http_parser import HttpRequestParser
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.kinds import ADD_ZONE, REQUIRE_TEAM, pod, test_registry
from tests.support import assert_valid_k8s, connect, eventually, policy_dir, port_of, read_response, review, running_server
from webhook.server.fastlane import MAX_HEAD, parse_head
from webhook.server.handlers import MAX_BODY
from webhook.server.limits import ServerLimits

FAST = ServerLimits(header_seconds=2.0, body_seconds=1.0, idle_seconds=5.0, request_seconds=10, tick_seconds=0.1,
                    refusal_delay_seconds=0.0)
SLOW_TEAM = REQUIRE_TEAM.replace("require-team", "slow-team") + "  sleepSeconds: 1.5\n"


def body_of(obj, uid=None) -> bytes:
    doc = review(obj)
    if uid:
        doc["request"]["uid"] = uid
    return json.dumps(doc).encode()


def post(path: str, body: bytes, extra: bytes = b"") -> bytes:
    return (b"POST " + path.encode() + b" HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" + extra
            + b"Content-Length: %d\r\n\r\n" % len(body) + body)


def chunked(path: str, body: bytes) -> bytes:
    """The same request with a chunked body: a framing the lane leaves to aiohttp."""
    return (b"POST " + path.encode() + b" HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n")


async def exchange(server, raw: bytes, pieces: int = 1):
    reader, writer = await connect(server)
    step = -(-len(raw) // pieces)
    for start in range(0, len(raw), step):
        writer.write(raw[start:start + step])
        await writer.drain()
        if pieces > 1:
            await asyncio.sleep(0.005)
    answer = await asyncio.wait_for(read_response(reader), 30)  # a hang guard
    return answer, reader, writer


def lane(headers: dict[str, str]) -> str:
    return "aiohttp" if "aiohttp" in headers.get("server", "") else "fast"


async def ends_cleanly(reader, within: float = 30.0) -> bool:
    """The server closed the connection within `within` seconds, with nothing more said (stricter than the
    hardening tests' closed_by_server, which lets a reset or trailing bytes count)."""
    try:
        return await asyncio.wait_for(reader.read(), within) == b""
    except (ConnectionError, asyncio.TimeoutError):
        return False


@pytest.fixture
def policies(tmp_path):
    return policy_dir(tmp_path / "policies", {"require.yaml": REQUIRE_TEAM, "zone.yaml": ADD_ZONE})


def serve(policies, tmp_path, **kw):
    return running_server(policies, tmp_path, registry=test_registry(), limits=FAST, **kw)


# --- the lane and aiohttp say the same -------------------------------------------------------------

@pytest.mark.parametrize("path, labels", [("/validate", {"team": "a"}), ("/validate", {}), ("/mutate", {"team": "a"}),
                                          ("/mutate?timeout=10s", {})])
async def test_the_lane_answers_a_review_with_the_bytes_aiohttp_answers(policies, tmp_path, path, labels):
    obj = pod(labels=labels)
    body = body_of(obj)
    async with serve(policies, tmp_path) as server:
        (fast_status, fast_headers, fast_body), _, fast = await exchange(server, post(path, body))
        (slow_status, slow_headers, slow_body), _, slow = await exchange(server, chunked(path, body))
        assert (lane(fast_headers), lane(slow_headers)) == ("fast", "aiohttp")
        assert fast_status == slow_status == 200
        assert fast_body == slow_body
        assert fast_headers["content-type"] == slow_headers["content-type"] == "application/json"
        assert re.fullmatch(r"\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT", fast_headers["date"])
        answer = json.loads(fast_body)
        assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
        response = answer["response"]
        if path.startswith("/mutate"):
            mutated = jsonpatch.apply_patch(obj, json.loads(base64.b64decode(response["patch"])))
            assert mutated["metadata"]["labels"]["example.org/zone~a"] == "b"
            assert_valid_k8s(mutated)
        else:
            assert response["allowed"] is bool(labels)
        for writer in (fast, slow):
            writer.close()


async def test_with_the_switch_off_aiohttp_answers_every_review_the_same(policies, tmp_path, monkeypatch):
    """QUARTERMASTER_FAST_LANE=0, the operator's switch: no request is read by the lane."""
    body = body_of(pod(labels={"team": "a"}))
    async with serve(policies, tmp_path) as server:
        (_, on_headers, on_body), _, on = await exchange(server, post("/validate", body))
    monkeypatch.setenv("QUARTERMASTER_FAST_LANE", "0")
    async with serve(policies, tmp_path) as server:
        (status, off_headers, off_body), _, off = await exchange(server, post("/validate", body))
        assert (lane(on_headers), lane(off_headers), status) == ("fast", "aiohttp", 200)
        assert off_body == on_body
    for writer in (on, off):
        writer.close()


async def test_a_malformed_review_gets_the_same_400_in_both_lanes(policies, tmp_path):
    async with serve(policies, tmp_path) as server:
        (fast_status, fast_headers, fast_body), _, fast = await exchange(server, post("/validate", b"[1, 2"))
        (slow_status, slow_headers, slow_body), _, slow = await exchange(server, chunked("/validate", b"[1, 2"))
        assert (lane(fast_headers), lane(slow_headers)) == ("fast", "aiohttp")
        assert fast_status == slow_status == 400
        assert fast_body == slow_body and b"not JSON" in fast_body
        _, metrics = await server.get("/metrics")
        assert 'quartermaster_malformed_requests_total{endpoint="validate",status="400"} 2.0' in metrics
        for writer in (fast, slow):
            writer.close()


# --- how requests arrive ---------------------------------------------------------------------------

async def test_pipelined_reviews_are_answered_in_order(policies, tmp_path):
    uids = [f"00000000-0000-0000-0000-00000000000{i}" for i in range(4)]
    raw = b"".join(post("/validate", body_of(pod(labels={"team": "a"} if i % 2 else {}), uid)) for i, uid in enumerate(uids))
    async with serve(policies, tmp_path) as server:
        reader, writer = await connect(server)
        writer.write(raw)
        await writer.drain()
        answers = [await asyncio.wait_for(read_response(reader), 30) for _ in uids]
        assert [lane(headers) for _, headers, _ in answers] == ["fast"] * 4
        responses = [json.loads(body)["response"] for _, _, body in answers]
        assert [r["uid"] for r in responses] == uids
        assert [r["allowed"] for r in responses] == [False, True, False, True]
        writer.close()


async def test_a_review_arriving_in_many_pieces_is_answered(policies, tmp_path):
    async with serve(policies, tmp_path) as server:
        (status, headers, body), reader, writer = await exchange(server, post("/validate", body_of(pod(labels={"team": "a"}))),
                                                                 pieces=40)
        assert (status, lane(headers)) == (200, "fast")
        assert json.loads(body)["response"]["allowed"] is True
        # the connection stays open and in the lane
        writer.write(post("/validate", body_of(pod())))
        status, headers, body = await asyncio.wait_for(read_response(reader), 30)
        assert (status, lane(headers), json.loads(body)["response"]["allowed"]) == (200, "fast", False)
        writer.close()


async def test_connection_close_is_honoured(policies, tmp_path):
    async with serve(policies, tmp_path) as server:
        (status, headers, _), reader, writer = await exchange(
            server, post("/validate", body_of(pod(labels={"team": "a"})), b"Connection: close\r\n"))
        assert (status, lane(headers), headers["connection"]) == (200, "fast", "close")
        assert await ends_cleanly(reader)
        writer.close()


async def test_a_stalled_body_gets_408_and_the_connection_is_closed(policies, tmp_path):
    async with serve(policies, tmp_path) as server:
        reader, writer = await connect(server)
        writer.write(post("/validate", b"x" * 100)[:-60])
        await writer.drain()
        status, headers, body = await asyncio.wait_for(read_response(reader), 30)
        assert (status, lane(headers), headers["connection"]) == (408, "fast", "close")
        assert b"body not received within 1s" in body
        assert await ends_cleanly(reader)
        _, metrics = await server.get("/metrics")
        assert 'quartermaster_malformed_requests_total{endpoint="validate",status="408"} 1.0' in metrics
        writer.close()


async def test_a_client_pipelining_megabytes_without_reading_gets_every_answer(policies, tmp_path):
    """Past ~3 MiB buffered the lane stops reading the connection until it has answered what it holds."""
    padded = pod(labels={"team": "a"}, volumes=[{"name": f"v{i}", "emptyDir": {}} for i in range(4000)])
    count = 30  # ~6 MB in all
    async with serve(policies, tmp_path) as server:
        reader, writer = await connect(server)

        async def send() -> None:
            for i in range(count):
                writer.write(post("/validate", body_of(padded, f"00000000-0000-0000-0000-{i:012d}")))
                await writer.drain()

        sending = asyncio.create_task(send())
        answers = [await asyncio.wait_for(read_response(reader), 20) for _ in range(count)]
        await sending
        assert all(status == 200 for status, _, _ in answers)
        assert [json.loads(body)["response"]["uid"][-2:] for _, _, body in answers] == [f"{i:02d}" for i in range(count)]
        writer.close()


async def test_a_client_that_never_reads_its_answers_cannot_fill_the_servers_memory(policies, tmp_path):
    """Answers it does not read stop the lane's writing, and the lane then stops reading the connection too: what
    the server holds of it stays within one largest request, however much the client sends."""
    import gc
    import socket

    from webhook.server.fastlane import MAX_BUFFERED, LaneProtocol

    request = post("/validate", body_of(pod(labels={"team": "a"})))
    async with serve(policies, tmp_path) as server:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", port_of(server)))
        reader, writer = await asyncio.open_connection(sock=sock, ssl=server.client_ssl(), server_hostname="localhost")
        await raw_answer(reader, writer, request)  # the connection is in the lane now

        def ours() -> LaneProtocol:
            here = sock.getsockname()
            return next(o for o in gc.get_objects() if isinstance(o, LaneProtocol) and o.transport is not None
                        and o.transport.get_extra_info("peername") == here)

        # small kernel buffers on both sides: unread answers reach the server's transport within a few hundred
        ours().transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)

        async def flood() -> None:
            while True:
                writer.write(request * 100)
                await writer.drain()

        flooding = asyncio.create_task(flood())
        protocol = ours()
        # however long the flood takes to fill the buffers on a busy machine: the lane ends up paused both ways
        await eventually(lambda: protocol.write_paused and protocol.read_paused, 60, "the lane never paused")
        assert len(protocol.buffer) <= MAX_BUFFERED + 512 * 1024  # a last read on top, at most
        # the server keeps answering everyone else
        (status, headers, _), _, other = await exchange(server, post("/validate", BODY))
        assert (status, lane(headers)) == (200, "fast")
        flooding.cancel()
        for w in (writer, other):
            w.close()


async def raw_answer(reader, writer, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    writer.write(raw)
    await writer.drain()
    return await asyncio.wait_for(read_response(reader), 30)


# --- what the lane hands to aiohttp ----------------------------------------------------------------

BODY = json.dumps(review(pod(labels={"team": "a"}))).encode()
LENGTH = b"Content-Length: %d\r\n" % len(BODY)


@pytest.mark.parametrize("name, raw, status", [
    ("a chunked body", chunked("/validate", BODY), 200),
    ("Expect: 100-continue", post("/validate", BODY, b"Expect: 100-continue\r\n"), 200),
    ("an Upgrade", post("/validate", BODY, b"Connection: upgrade\r\nUpgrade: h2c\r\n"), 200),
    ("another path", post("/validate/", BODY), 404),
    ("another method", b"GET /validate HTTP/1.1\r\nHost: localhost\r\n\r\n", 405),
    ("no Content-Length", b"POST /validate HTTP/1.1\r\nHost: localhost\r\n\r\n", 400),
])
async def test_requests_the_lane_does_not_read_are_answered_by_aiohttp_on_the_same_connection(
        policies, tmp_path, name, raw, status):
    async with serve(policies, tmp_path) as server:
        (got, headers, _), reader, writer = await exchange(server, raw)
        assert (got, lane(headers)) == (status, "aiohttp"), name
        # the connection is aiohttp's from then on, and still serves reviews
        writer.write(post("/validate", BODY))
        got, headers, body = await asyncio.wait_for(read_response(reader), 30)
        assert (got, lane(headers), json.loads(body)["response"]["allowed"]) == (200, "aiohttp", True)
        writer.close()


@pytest.mark.parametrize("name, raw, reason", [
    ("HTTP/1.0", post("/validate", BODY).replace(b"HTTP/1.1", b"HTTP/1.0", 1), None),
    ("a repeated Content-Length", post("/validate", BODY, LENGTH), b"Duplicate Content-Length"),
    ("a signed Content-Length", post("/validate", BODY).replace(b"Length: ", b"Length: +"), b"Content-Length"),
    ("Transfer-Encoding beside Content-Length", post("/validate", BODY, b"Transfer-Encoding: chunked\r\n"),
     b"Transfer-Encoding"),
    ("a folded header", post("/validate", BODY, b"X-Note: a\r\n b\r\n"), b"whitespace"),
    ("a control byte in a header", post("/validate", BODY, b"X-Note: a\x01b\r\n"), b"header value"),
    ("a space before the colon", post("/validate", BODY).replace(b"Content-Length:", b"Content-Length :"), b"header"),
    ("a header block past 8 KiB", post("/validate", BODY, b"X-Note: " + b"a" * MAX_HEAD + b"\r\n"), b"8190 bytes"),
])
async def test_requests_outside_the_lanes_grammar_get_aiohttps_answer(policies, tmp_path, name, raw, reason):
    async with serve(policies, tmp_path) as server:
        (status, headers, body), _, writer = await exchange(server, raw)
        assert lane(headers) == "aiohttp", name
        if reason is None:
            assert status == 200 and json.loads(body)["response"]["allowed"] is True
        else:
            assert status == 400 and reason in body, body
        writer.close()


async def test_a_body_over_3_mib_gets_413(policies, tmp_path):
    async with serve(policies, tmp_path) as server:
        (status, headers, body), _, writer = await exchange(server, post("/validate", b" " * (MAX_BODY + 1)))
        assert (status, lane(headers)) == (413, "aiohttp") and b"3 MiB" in body
        writer.close()


# --- deadlines and shutdown ------------------------------------------------------------------------

async def test_the_apiservers_timeout_in_the_url_bounds_the_review(tmp_path):
    directory = policy_dir(tmp_path / "policies", {"slow.yaml": SLOW_TEAM})
    async with serve(directory, tmp_path) as server:
        (status, headers, body), _, writer = await exchange(server, post("/validate?dryRun=x&timeout=1s", BODY))
        assert (status, lane(headers)) == (200, "fast")
        # the server's own answer proves the deadline: the policy sleeps longer than the whole timeout
        response = json.loads(body)["response"]
        assert response["allowed"] is False and "timed out" in response["status"]["message"]
        writer.close()


async def test_stopping_the_server_finishes_reviews_in_flight(tmp_path):
    directory = policy_dir(tmp_path / "policies", {"slow.yaml": SLOW_TEAM})
    async with serve(directory, tmp_path) as server:
        reader, writer = await connect(server)
        idle_reader, idle = await connect(server)
        writer.write(post("/validate", BODY))
        await writer.drain()
        await asyncio.sleep(0.3)  # in flight: the policy sleeps 1.5 s
    # the server has stopped: the review in flight was answered first, then its connection closed
    status, headers, body = await asyncio.wait_for(read_response(reader), 30)
    assert (status, lane(headers), headers["connection"]) == (200, "fast", "close")
    assert json.loads(body)["response"]["allowed"] is True
    assert await ends_cleanly(reader) and await ends_cleanly(idle_reader)
    for w in (writer, idle):
        w.close()


# --- the grammar -----------------------------------------------------------------------------------

def head(*fields: bytes, line: bytes = b"POST /mutate HTTP/1.1", host: bytes | None = b"Host: localhost") -> bytes:
    return b"\r\n".join((line, *((host,) if host else ()), *fields))


def test_the_head_of_an_api_server_call_is_read():
    parsed = parse_head(head(b"User-Agent: kube-apiserver-admission", b"Content-Length: 3120",
                             b"Accept: application/json, */*", b"Content-Type: application/json", b"Accept-Encoding: gzip",
                             line=b"POST /validate?timeout=10s HTTP/1.1", host=b"Host: quartermaster.quartermaster.svc:443"))
    assert parsed is not None
    assert (parsed.endpoint, parsed.timeout, parsed.length, parsed.close) == ("validate", "10s", 3120, False)


@pytest.mark.parametrize("fields, close", [
    ((b"content-length:5", b"CONNECTION: Keep-Alive"), False),
    ((b"Content-Length: \t5 ", b"Connection: keep-alive, close"), True),
    ((b"Connection: close", b"Content-Length: 5", b"X-Empty:"), True),
    ((b"Connection: close", b"Connection: keep-alive", b"Content-Length: 5"), True),  # a close anywhere closes
])
def test_header_names_case_and_whitespace(fields, close):
    parsed = parse_head(head(*fields))
    assert parsed is not None and (parsed.length, parsed.close) == (5, close)


@pytest.mark.parametrize("query, timeout", [(b"?timeout=2s", "2s"), (b"?a=b&timeout=500ms&timeout=9s", "500ms"),
                                            (b"?timeout=10%C2%B5s", "10\u00b5s"), (b"?", None), (b"", None)])
def test_the_timeout_is_read_from_the_query(query, timeout):
    parsed = parse_head(head(b"Content-Length: 1", line=b"POST /mutate" + query + b" HTTP/1.1"))
    assert parsed is not None and parsed.timeout == timeout


@pytest.mark.parametrize("raw", [
    head(b"Content-Length: 1", line=b"POST /mutate HTTP/1.0"),
    head(b"Content-Length: 1", line=b"PUT /mutate HTTP/1.1"),
    head(b"Content-Length: 1", line=b"POST /metrics HTTP/1.1"),
    head(b"Content-Length: 1", line=b"POST /mutate#x HTTP/1.1"),
    head(b"Content-Length: 1", line=b"POST  /mutate HTTP/1.1"),
    head(b"Content-Length: 1", line=b"POST http://x/mutate HTTP/1.1"),
    head(),  # no length
    head(b"Content-Length: 1", host=None),  # aiohttp's parser requires a Host
    head(b"Content-Length: 1", b"host: elsewhere"),
    head(b"Content-Length: 1", b"Content-Length: 1"),
    head(b"Content-Length: -1"), head(b"Content-Length: 1e3"), head(b"Content-Length: "),
    head(b"Content-Length: %d" % (MAX_BODY + 1)), head(b"Content-Length: 0000000001"),
    head(b"Content-Length: 1", b"Transfer-Encoding: identity"),
    head(b"Content-Length: 1", b"Content-Encoding: gzip"),
    head(b"Content-Length: 1", b"Expect: 100-continue"),
    head(b"Content-Length: 1", b"Upgrade: h2c"),
    head(b"Content-Length: 1", b"Connection: upgrade"),
    head(b"Content-Length: 1", b" folded"),
    head(b"Content-Length: 1", b"Bad Name: x"),
    head(b"Content-Length: 1", b"X: a\x00b"),
    head(b"Content-Length: 1", b"X: a\rb"),
    head(b"Content-Length: 1", b"NoColon"),
    head(b"Content-Length: 1", *[b"X-%d: y" % i for i in range(120)]),
    # a repeated singleton field: aiohttp's parser answers 400 (found by test_fastlane_differential.py)
    head(b"Content-Length: 1", b"Content-Type: application/json", b"content-type: application/json"),
    head(b"Content-Length: 1", b"User-Agent: a", b"User-Agent: b"),
])
def test_heads_outside_the_grammar_are_left_to_aiohttp(raw):
    assert parse_head(raw) is None


# what the API server sends, and byte-level mutations of it
_HEADS = [head(b"User-Agent: kube-apiserver-admission", b"Content-Length: 5", b"Accept: application/json, */*",
               b"Content-Type: application/json", b"Accept-Encoding: gzip", line=b"POST /validate?timeout=10s HTTP/1.1",
               host=b"Host: quartermaster.quartermaster.svc:443"),
          head(b"Content-Length: 5", b"Connection: keep-alive")]
_FIELDS = [b"Host: x", b"host:", b"Content-Length: 5", b"content-length:5", b"Content-Length: 05", b"Content-Length:  5 ",
           b"Connection: close", b"Connection: Keep-Alive, close", b"Connection: ,close", b"Transfer-Encoding: chunked",
           b"Expect: 100-continue", b"X-A: \xe9", b"X-A: a\tb", b"X-A:", b"X-A: \x7f", b"X-\xe9: a"]
_BYTES = list(b"\r\n \t:;,=?&%/\x00\x01\x7f\x80\xffaZ09-_.~\"\\")


@st.composite
def _heads(draw) -> bytes:
    raw = bytearray(draw(st.sampled_from(_HEADS)) + b"".join(b"\r\n" + f for f in draw(st.lists(st.sampled_from(_FIELDS),
                                                                                                max_size=3))))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(raw) - 1))
        edit = draw(st.sampled_from(["insert", "delete", "replace"]))
        if edit == "delete":
            del raw[at]
        else:
            raw[at:at + (edit == "replace")] = bytes([draw(st.sampled_from(_BYTES))])
    return bytes(raw)


def _aiohttp_reads(data: bytes) -> list:
    """aiohttp's own request parser, set up as its server protocol sets it up, over `data`."""
    loop = asyncio.new_event_loop()
    try:
        parser = HttpRequestParser(BaseProtocol(loop), loop, 2**16, max_line_size=8190, max_field_size=8190,
                                   max_headers=128)
        messages, _, _ = parser.feed_data(data)
        return messages
    finally:
        loop.close()


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(_heads())
def test_every_head_the_lane_reads_aiohttps_parser_reads_the_same_way(raw):
    """No request is read two ways: whatever the lane accepts, aiohttp's parser frames alike (the same body, the
    next request where the lane sees it), with the same method, path, version, ?timeout= and keep-alive."""
    parsed = parse_head(raw)
    if parsed is None:
        return  # aiohttp's to read
    body = b"x" * parsed.length
    following = b"" if parsed.close else b"POST /validate HTTP/1.1\r\nHost: y\r\nContent-Length: 0\r\n\r\n"
    messages = _aiohttp_reads(raw + b"\r\n\r\n" + body + following)
    assert len(messages) == (1 if parsed.close else 2)
    message, payload = messages[0]
    assert (message.method, message.version, message.url.path) == ("POST", (1, 1), "/" + parsed.endpoint)
    assert not message.chunked and not message.upgrade and message.should_close == parsed.close
    assert message.url.query.get("timeout") == parsed.timeout
    assert b"".join(payload._buffer) == body


def test_a_hostile_head_is_refused_in_one_pass():
    """Whatever its shape, a head is matched without backtracking (possessive patterns): these would take
    minutes with backtracking patterns."""
    for raw in (head(b"X: " + b" \t" * 4000 + b"\x01"), head(*[b"X:" + b" " * 30] * 250, b"\x01"),
                head(b"Content-Length: 1", line=b"POST /mutate?" + b"%" * 8000 + b" HTTP/1.1 ")):
        assert parse_head(raw) is None
