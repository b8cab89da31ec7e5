"""Rotation of a running server's certificates (the files a mounted Secret would update), under load.

Clients keep POSTing AdmissionReviews to the real HTTPS server while the CA rolls over: some open a
new TLS connection per request (a handshake each time, so they meet the new chain as soon as it is
served), some keep one connection alive. Clients that trust only the old CA, only the new CA, or the
bundle all keep being answered; no request fails. Loops are bounded by count and by a deadline.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import ssl
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from tests.kinds import REQUIRE_TEAM, test_registry
from tests.support import policy_dir, raw_http, review, running_server
from webhook.certs.rotate import RotationPolicy, rotate_directory

MAX_REQUESTS_PER_CLIENT = 400
DEADLINE_SECONDS = 60


@dataclass
class Tally:
    ok: int = 0
    failures: list[str] = field(default_factory=list)
    serials: set[int] = field(default_factory=set)  # serving certificates seen by fresh connections


def pod(index: int) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{index}", "namespace": "alice",
                                                          "labels": {"team": "a"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


async def post_fresh(url: str, trust_ctx: ssl.SSLContext, body: dict) -> tuple[int, dict, int]:
    """One request on a new TLS connection: status, JSON answer, serial of the certificate served."""
    host, port = url.removeprefix("https://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port), ssl=trust_ctx, server_hostname="localhost")
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        status, raw = await raw_http(reader, writer, "POST", "/validate", json.dumps(body).encode(), keep_alive=False)
        answer = json.loads(raw)
    finally:
        writer.close()
    return status, answer, x509.load_der_x509_certificate(der).serial_number


async def client(url: str, trust_ctx: ssl.SSLContext, tally: Tally, stop: asyncio.Event, fresh: bool) -> None:
    connector = aiohttp.TCPConnector(ssl=trust_ctx, limit=1)
    async with aiohttp.ClientSession(connector=connector) as session:
        for index in range(MAX_REQUESTS_PER_CLIENT):
            if stop.is_set():
                return
            body = review(pod(index), namespace="alice")
            try:
                if fresh:
                    status, answer, serial = await post_fresh(url, trust_ctx, body)
                    tally.serials.add(serial)
                else:
                    async with session.post(f"{url}/validate", data=json.dumps(body),
                                            headers={"Content-Type": "application/json"}) as resp:
                        status, answer = resp.status, await resp.json()
                assert status == 200 and answer["response"]["uid"] == body["request"]["uid"], (status, answer)
                tally.ok += 1
            except Exception as exc:  # every failure is recorded; the test asserts there are none
                tally.failures.append(f"{type(exc).__name__}: {exc}")


def trust(*pems: bytes) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=b"".join(pems).decode())


async def until(condition, loop_deadline: float, what: str) -> None:
    loop = asyncio.get_running_loop()
    while not condition():
        assert loop.time() < loop_deadline, f"gave up waiting: {what}"
        await asyncio.sleep(0.02)


async def test_ca_rollover_under_load_drops_no_request(tmp_path: Path):
    policies = policy_dir(tmp_path / "policies", {"require-team.yaml": REQUIRE_TEAM})
    async with running_server(policies, tmp_path, registry=test_registry(), cert_poll_seconds=0.05) as server:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DEADLINE_SECONDS
        old_ca_pem = server.ca.read_bytes()
        old_leaf = x509.load_pem_x509_certificate((server.cert_dir / "tls.crt").read_bytes())
        stop = asyncio.Event()
        old_fresh, old_kept, bundle_fresh, new_fresh = Tally(), Tally(), Tally(), Tally()
        tasks = [asyncio.create_task(client(server.url, trust(old_ca_pem), old_fresh, stop, fresh=True)) for _ in range(3)]
        tasks += [asyncio.create_task(client(server.url, trust(old_ca_pem), old_kept, stop, fresh=False)) for _ in range(2)]
        await until(lambda: (old_fresh.ok >= 20 and old_kept.ok >= 10) or old_fresh.failures or old_kept.failures,
                    deadline, "load before the rotation")

        plan = await asyncio.to_thread(rotate_directory, server.cert_dir, RotationPolicy(), None, True)
        new_ca_pem = plan.after.bundle[-1].public_bytes(serialization.Encoding.PEM)
        new_leaf = plan.after.leaf
        assert plan.after.bundle[0].public_bytes(serialization.Encoding.PEM) == old_ca_pem
        tasks += [asyncio.create_task(client(server.url, trust(old_ca_pem, new_ca_pem), bundle_fresh, stop, fresh=True))]
        # the server reloads the files by itself; clients of the old CA meet the cross-signed chain
        await until(lambda: new_leaf.serial_number in old_fresh.serials or old_fresh.failures, deadline,
                    "the new chain being served")
        tasks += [asyncio.create_task(client(server.url, trust(new_ca_pem), new_fresh, stop, fresh=True)) for _ in range(2)]
        settled = old_fresh.ok
        await until(lambda: (old_fresh.ok >= settled + 30 and new_fresh.ok >= 30 and bundle_fresh.ok >= 10)
                    or old_fresh.failures or new_fresh.failures or bundle_fresh.failures, deadline, "load after the rotation")
        stop.set()
        await asyncio.gather(*tasks)

    for name, tally in (("old CA, new connections", old_fresh), ("old CA, kept connection", old_kept),
                        ("bundle", bundle_fresh), ("new CA only", new_fresh)):
        assert tally.failures == [], f"{name}: {tally.failures[:5]}"
    assert {old_leaf.serial_number, new_leaf.serial_number} <= old_fresh.serials
    assert new_fresh.serials == {new_leaf.serial_number}


async def test_after_the_overlap_only_the_new_ca_is_trusted(tmp_path: Path):
    """The retire step really removes the old CA: a client of the old CA alone is now refused."""
    policies = policy_dir(tmp_path / "policies", {"require-team.yaml": REQUIRE_TEAM})
    async with running_server(policies, tmp_path, registry=test_registry(), cert_poll_seconds=0.05) as server:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DEADLINE_SECONDS
        old_ca_pem = server.ca.read_bytes()
        rolled = await asyncio.to_thread(rotate_directory, server.cert_dir, RotationPolicy(), None, True)
        new_ca_pem = rolled.after.bundle[-1].public_bytes(serialization.Encoding.PEM)
        later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=25)
        retired = await asyncio.to_thread(rotate_directory, server.cert_dir, RotationPolicy(), later)
        assert len(retired.after.bundle) == 1 and retired.after.intermediates == ()

        async def handshake(pem: bytes) -> bool:
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", int(server.url.rsplit(":", 1)[1]),
                                                          ssl=trust(pem), server_hostname="localhost")
            except ssl.SSLCertVerificationError:
                return False
            writer.close()
            return True

        async def retired_chain_served() -> bool:
            return not await handshake(old_ca_pem)

        while not await retired_chain_served():
            assert loop.time() < deadline, "the retired chain was never served"
            await asyncio.sleep(0.05)
        assert await handshake(new_ca_pem)
