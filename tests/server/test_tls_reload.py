"""A rotated Secret: new files on disk are served to new connections, established ones keep working."""

import asyncio
import ssl

import pytest

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from tests.kinds import REQUIRE_TEAM, test_registry
from tests.support import policy_dir, raw_http, running_server
from webhook.certs.generate import CertPaths, make_ca, make_serving_cert, write_serving_cert


async def peer_certificate(port: int, ca_file: str) -> x509.Certificate:
    ctx = ssl.create_default_context(cafile=ca_file)
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx, server_hostname="localhost")
    der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    writer.close()
    return x509.load_der_x509_certificate(der)


async def http_get(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str) -> int:
    return (await raw_http(reader, writer, "GET", path))[0]


@pytest.fixture
def policies(tmp_path):
    return policy_dir(tmp_path / "p", {"r.yaml": REQUIRE_TEAM})


async def test_certificate_reload_without_restart(policies, tmp_path):
    async with running_server(policies, tmp_path, registry=test_registry()) as server:
        port = int(server.url.rsplit(":", 1)[1])
        old_serial = (await peer_certificate(port, str(server.ca))).serial_number
        # an established keep-alive connection, opened before the rotation
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ssl.create_default_context(cafile=str(server.ca)),
                                                       server_hostname="localhost")
        assert (await http_get(reader, writer, "/healthz")) == 200

        new_ca, new_ca_key = make_ca("Rotated CA")
        cert, key = make_serving_cert(new_ca, new_ca_key, ["localhost"])
        new_ca_file = tmp_path / "new-ca.crt"
        new_ca_file.write_bytes(new_ca.public_bytes(serialization.Encoding.PEM))
        write_serving_cert(CertPaths(server.cert_dir), cert, key)

        loop = asyncio.get_running_loop()
        end = loop.time() + 10
        while True:
            try:
                served = await peer_certificate(port, str(new_ca_file))
                break
            except ssl.SSLError:
                assert loop.time() < end, "new certificate never served"
                await asyncio.sleep(0.1)
        assert served.serial_number == cert.serial_number != old_serial
        # the connection opened before the rotation was not dropped: it still answers, with its old certificate
        assert (await http_get(reader, writer, "/healthz")) == 200
        old_peer = x509.load_der_x509_certificate(writer.get_extra_info("ssl_object").getpeercert(binary_form=True))
        assert old_peer.serial_number == old_serial
        writer.close()


async def test_half_written_pair_keeps_old_certificate(policies, tmp_path):
    async with running_server(policies, tmp_path, registry=test_registry()) as server:
        port = int(server.url.rsplit(":", 1)[1])
        before = (await peer_certificate(port, str(server.ca))).serial_number
        (server.cert_dir / "tls.crt").write_text("-----BEGIN CERTIFICATE-----\ntruncated")
        await asyncio.sleep(0.6)  # several reload polls
        assert (await peer_certificate(port, str(server.ca))).serial_number == before


async def test_mismatched_pair_keeps_serving_and_no_sni_clients_get_new_pair(policies, tmp_path):
    """A Secret caught between its key and its certificate must not cost a single handshake."""
    async with running_server(policies, tmp_path, registry=test_registry()) as server:
        port = int(server.url.rsplit(":", 1)[1])
        before = (await peer_certificate(port, str(server.ca))).serial_number
        ca = x509.load_pem_x509_certificate(server.ca.read_bytes())
        ca_key = serialization.load_pem_private_key((server.cert_dir / "ca.key").read_bytes(), password=None)
        cert, key = make_serving_cert(ca, ca_key, ["localhost"])
        # only the key is new: certificate and key do not match
        (server.cert_dir / "tls.key").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                                     serialization.NoEncryption()))
        await asyncio.sleep(0.6)  # several reload polls
        assert (await peer_certificate(port, str(server.ca))).serial_number == before
        write_serving_cert(CertPaths(server.cert_dir), cert, key)
        loop = asyncio.get_running_loop()
        end = loop.time() + 10
        while (await peer_certificate(port, str(server.ca))).serial_number != cert.serial_number:
            assert loop.time() < end, "new pair never served"
            await asyncio.sleep(0.1)
        # a client that sends no server name (connects by IP) is handed the new pair too
        ctx = ssl.create_default_context(cafile=str(server.ca))
        ctx.check_hostname = False
        _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx)
        served = x509.load_der_x509_certificate(writer.get_extra_info("ssl_object").getpeercert(binary_form=True))
        writer.close()
        assert served.serial_number == cert.serial_number
