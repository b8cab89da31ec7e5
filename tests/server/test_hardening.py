"""Slow, stalled and hostile clients against the real HTTPS server on real sockets; TLS suites; client certificates."""

import asyncio
import datetime as dt
import json
import re
import shutil
import ssl
from dataclasses import replace

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.kinds import REQUIRE_TEAM, pod, test_registry
from tests.support import REPO, connect, policy_dir, raw_http, review, running_server
from webhook.certs.generate import make_ca
from webhook.server.limits import ServerLimits

FAST = ServerLimits(handshake_seconds=2, header_seconds=1.0, body_seconds=1.0, idle_seconds=2.0, request_seconds=5,
                    tick_seconds=0.1)
ALLOWED = json.dumps(review(pod(labels={"team": "a"}))).encode()
HANG_GUARD = 30  # seconds: stops a hung test, asserts no speed


@pytest.fixture
def policies(tmp_path):
    return policy_dir(tmp_path / "policies", {"require.yaml": REQUIRE_TEAM})


def serve(policies, tmp_path, limits=FAST, **kw):
    return running_server(policies, tmp_path, registry=test_registry(), limits=limits, **kw)


async def closed_by_server(reader, within: float) -> bool:
    """The server closed the connection (whatever it said first) within `within` seconds."""
    try:
        await asyncio.wait_for(reader.read(), within)
    except (ConnectionError, ssl.SSLError):
        pass
    except asyncio.TimeoutError:
        return False
    return True


async def served(server) -> None:
    status, body = await server.post("/validate", None, raw=ALLOWED)
    assert status == 200 and body["response"]["allowed"] is True


def closed_for(metrics: str, reason: str) -> int:
    """Connections the server says it closed for `reason` (its watchdog names the deadline that ran out)."""
    found = re.search(r'quartermaster_connections_closed_total\{reason="%s"\} (\d+)' % re.escape(reason), metrics)
    return int(found.group(1)) if found else 0


async def test_fifty_slow_clients_are_closed_and_others_served(policies, tmp_path):
    # deadlines long enough that the others are served well before them: the order of events proves it
    async with serve(policies, tmp_path, limits=replace(FAST, header_seconds=8.0, body_seconds=8.0)) as server:
        slow = []
        for i in range(50):
            reader, writer = await connect(server)
            if i % 2:  # half stall inside the headers, half after the headers and one byte of body
                writer.write(b"POST /validate HTTP/1.1\r\nHost: localhost\r\n")
            else:
                writer.write(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5000\r\n\r\n{")
            await writer.drain()
            slow.append((reader, writer))
        await asyncio.wait_for(asyncio.gather(*(served(server) for _ in range(40))), HANG_GUARD)
        # all forty answered while every slow client still holds its connection: none waited for them
        assert not any(reader.at_eof() for reader, _ in slow)
        closed = await asyncio.gather(*(closed_by_server(reader, HANG_GUARD) for reader, _ in slow))
        assert all(closed)
        await served(server)
        metrics = (await server.get("/metrics"))[1]
        assert closed_for(metrics, "header-timeout") >= 25
        for _, writer in slow:
            writer.close()


async def test_stalled_body_gets_408_and_is_closed(policies, tmp_path):
    async with serve(policies, tmp_path) as server:
        reader, writer = await connect(server)
        writer.write(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{\"a\"")
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), HANG_GUARD)
        assert line.split()[1] == b"408"
        assert await closed_by_server(reader, HANG_GUARD)
        writer.close()


async def test_silent_and_idle_connections_are_closed(policies, tmp_path):
    async with serve(policies, tmp_path) as server:
        silent_reader, silent = await connect(server)
        idle_reader, idle = await connect(server)
        status, _ = await raw_http(idle_reader, idle, "POST", "/validate", ALLOWED)
        assert status == 200
        assert await closed_by_server(silent_reader, HANG_GUARD)
        assert await closed_by_server(idle_reader, HANG_GUARD)
        # the server names the deadline that closed each: the header one for the connection that never said
        # anything, the idle one for the connection after its answer
        metrics = (await server.get("/metrics"))[1]
        assert closed_for(metrics, "header-timeout") >= 1 and closed_for(metrics, "idle-timeout") >= 1, metrics
        # a connection in use is not idle: three requests 1.2 s apart on one connection all get answers
        reader, writer = await connect(server)
        for _ in range(3):
            assert (await raw_http(reader, writer, "POST", "/validate", ALLOWED))[0] == 200
            await asyncio.sleep(1.2)
        for w in (silent, idle, writer):
            w.close()


async def test_connection_cap_evicts_waiting_connections_first(policies, tmp_path):
    limits = ServerLimits(max_connections=8, header_seconds=30, idle_seconds=30, tick_seconds=0.1)
    async with serve(policies, tmp_path, limits=limits) as server:
        held = [await connect(server) for _ in range(8)]
        await asyncio.sleep(0.2)
        await asyncio.wait_for(served(server), HANG_GUARD)
        assert await closed_by_server(held[0][0], HANG_GUARD)
        # room was made by evicting the oldest silent connection, not by its 30 s header deadline
        metrics = (await server.get("/metrics"))[1]
        assert closed_for(metrics, "evicted") >= 1 and closed_for(metrics, "header-timeout") == 0, metrics
        assert server.qm is not None
        for _, writer in held:
            writer.close()


async def test_event_loop_lag_is_exported(policies, tmp_path):
    async with serve(policies, tmp_path) as server:
        await asyncio.sleep(0.5)
        metrics = (await server.get("/metrics"))[1]
        assert "quartermaster_event_loop_lag_seconds_bucket" in metrics
        assert "quartermaster_event_loop_lag_max_seconds" in metrics


@pytest.mark.parametrize("ciphers", ["ECDHE-ECDSA-AES256-SHA384", "ECDHE-ECDSA-AES128-SHA", "ECDHE-RSA-AES256-SHA384:AES256-SHA"])
async def test_tls12_cbc_suites_refused(policies, tmp_path, ciphers):
    async with serve(policies, tmp_path) as server:
        context = server.client_ssl()
        context.maximum_version = ssl.TLSVersion.TLSv1_2
        context.set_ciphers(ciphers)
        with pytest.raises((ssl.SSLError, ConnectionError)):
            _, writer = await connect(server, context)
            writer.close()
        context = server.client_ssl()
        context.maximum_version = ssl.TLSVersion.TLSv1_2
        _, writer = await connect(server, context)
        assert "GCM" in writer.get_extra_info("cipher")[0] or "CHACHA20" in writer.get_extra_info("cipher")[0]
        writer.close()


def _client_cert(tmp_path, name, ca_cert, ca_key):
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
            .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=1)).not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    cert_path, key_path = tmp_path / f"{name}.crt", tmp_path / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


async def test_client_ca_requires_a_certificate_it_signed(policies, tmp_path):
    trusted_cert, trusted_key = make_ca("API server client CA")
    other_cert, other_key = make_ca("Someone else")
    ca_file = tmp_path / "client-ca.crt"
    ca_file.write_bytes(trusted_cert.public_bytes(serialization.Encoding.PEM))
    good = _client_cert(tmp_path, "good", trusted_cert, trusted_key)
    bad = _client_cert(tmp_path, "bad", other_cert, other_key)
    async with serve(policies, tmp_path, client_ca=ca_file) as server:
        context = server.client_ssl()
        context.load_cert_chain(*map(str, bad))
        with pytest.raises((ssl.SSLError, ConnectionError, asyncio.IncompleteReadError, IndexError)):
            reader, writer = await connect(server, context)
            await raw_http(reader, writer, "GET", "/healthz")  # TLS 1.3: the refusal arrives with the first read
        # no certificate at all: the kubelet's probes get through, admission does not
        reader, writer = await connect(server)
        assert (await raw_http(reader, writer, "GET", "/healthz"))[0] == 200
        status, body = await raw_http(reader, writer, "POST", "/validate", ALLOWED)
        assert status == 401 and b"client certificate" in body
        writer.close()
        context = server.client_ssl()
        context.load_cert_chain(*map(str, good))
        reader, writer = await connect(server, context)
        status, body = await raw_http(reader, writer, "POST", "/validate", ALLOWED)
        assert status == 200 and json.loads(body)["response"]["allowed"] is True
        writer.close()


def _hostile_bodies() -> list[bytes]:
    huge = pod(labels={"team": "a"})
    huge["spec"]["volumes"] = [{"name": "v", "ephemeral": {"volumeClaimTemplate": {"spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1e99999999"}}}}}}]
    deep = json.dumps(review(pod(labels={"team": "a"}))).encode()
    deep = deep.replace(b'"spec": {', b'"spec": {"x": ' + b"[" * 100_000 + b"]" * 100_000 + b", ", 1)
    return [json.dumps(review(huge)).encode(), deep]


async def test_hostile_payloads_do_not_stall_the_event_loop(tmp_path):
    """What froze the server for minutes (a 1e99999999 quantity) and deep JSON: the loop keeps answering probes."""
    directory = tmp_path / "p"
    directory.mkdir()
    shutil.copy(REPO / "policies" / "profile-quota.yaml", directory)
    async with running_server(directory, tmp_path, state=REPO / "examples" / "state", limits=FAST) as server:
        async def probe() -> None:
            assert (await server.get("/healthz"))[0] == 200
        bodies = _hostile_bodies() * 20
        # the parser's old big-integer work held the loop for minutes: the hang guard stops that; the work
        # itself is bounded by tests/model/test_quantity.py (lines run, bytes held) and the JSON depth limit
        results = await asyncio.wait_for(asyncio.gather(*(server.post("/validate", None, raw=b) for b in bodies),
                                                        *(probe() for _ in range(20))), HANG_GUARD)
        statuses = [r[0] for r in results[:len(bodies)]]
        assert set(statuses) <= {200, 400}


async def test_undecodable_body_is_a_400_and_a_client_leaving_mid_body_no_error(policies, tmp_path, caplog):
    """A Content-Encoding that does not decode was a 500 with an "unhandled error" traceback; a client that
    hung up mid-body logged the same traceback: one line of error log per hostile connection."""
    async with serve(policies, tmp_path) as server:
        reader, writer = await connect(server)
        writer.write(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Encoding: deflate\r\n"
                     b"Content-Length: 5\r\n\r\nabcde")
        await writer.drain()
        head = await asyncio.wait_for(reader.read(), HANG_GUARD)
        writer.close()
        assert head.startswith(b"HTTP/1.1 400"), head[:80]
        assert b"body could not be read" in head and b"deflate" in head

        reader, writer = await connect(server)
        writer.write(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n" % len(ALLOWED)
                     + ALLOWED[:40])
        await writer.drain()
        await asyncio.sleep(0.2)
        writer.transport.abort()
        await asyncio.sleep(0.3)
        await served(server)
        metrics = (await server.get("/metrics"))[1]
        assert 'status="400"' in metrics and 'status="500"' not in metrics
    assert not [r for r in caplog.records if r.levelno >= 40 and r.name.startswith("webhook")], \
        [r.getMessage() for r in caplog.records if r.levelno >= 40]


async def test_a_lone_surrogate_is_a_400_and_metrics_keep_scraping(policies, tmp_path):
    """A namespace holding an unpaired \\ud800 escape became a metric label that no UTF-8 encoder takes: every
    /metrics scrape after that one review answered 500."""
    async with serve(policies, tmp_path) as server:
        body = json.dumps(review(pod(labels={"team": "a"}))).replace('"namespace": "', '"namespace": "\\udfff', 1)
        status, answer = await server.post("/validate", None, raw=body.encode())
        assert status == 400 and "surrogate" in answer["error"]
        status, metrics = await server.get("/metrics")
        assert status == 200 and 'status="400"' in metrics
