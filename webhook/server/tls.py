"""Server TLS: 1.2 or newer with Mozilla's "intermediate" ciphers, optional client-certificate
authentication of the API server, and certificate files reloaded when they change on disk.

A live SSLContext is never modified. Loading a new pair into it is two steps (certificate, then
key) that handshakes on the event loop can interleave with, and a mismatched pair (a Secret
half-written) leaves it with no certificate at all. Instead every new pair is loaded into a fresh
context, checked, and published; the listening context's SNI callback, which OpenSSL calls on
every ClientHello (with or without a server name), hands each new handshake the current context.
Established connections keep the context they were made with: nothing is restarted or dropped.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import ssl
from pathlib import Path

log = logging.getLogger(__name__)


# Mozilla's "intermediate" configuration (ssl-config.mozilla.org, guideline 5.7): AEAD suites with forward
# secrecy only, no CBC. It applies to TLS 1.2; TLS 1.3's suites (all AEAD) are not configurable here and
# are exactly the ones the guideline lists. The DHE suites take effect only with DH parameters, which we
# do not load: ECDHE covers every client the API server is built with.
INTERMEDIATE_CIPHERS = ":".join((
    "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
    "DHE-RSA-AES128-GCM-SHA256", "DHE-RSA-AES256-GCM-SHA384", "DHE-RSA-CHACHA20-POLY1305",
))


def server_context(cert: Path, key: Path, client_ca: Path | None = None) -> ssl.SSLContext:
    """With `client_ca`, a certificate a client presents must be signed by that CA (Kubernetes' webhook client
    authentication: the API server's admission config names a kubeconfig with that certificate). Optional at
    the handshake, so that the kubelet's probes (which present none) reach /healthz and /readyz; the
    admission endpoints refuse a connection without one (server.handlers)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(INTERMEDIATE_CIPHERS)
    context.options |= ssl.OP_NO_COMPRESSION | ssl.OP_NO_RENEGOTIATION
    context.load_cert_chain(str(cert), str(key))
    if client_ca is not None:
        context.load_verify_locations(cafile=str(client_ca))
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


class CertificateReloader:
    def __init__(self, cert: Path, key: Path, client_ca: Path | None = None) -> None:
        self.cert = cert
        self.key = key
        self.client_ca = client_ca
        self.reloads = 0
        self._digest = self._read_digest()
        self.current = server_context(cert, key, client_ca)
        # what the listener is built with; never changed after this (it fixes the verify mode of every handshake)
        self.context = server_context(cert, key, client_ca)
        self.context.sni_callback = self._select

    def _select(self, connection: ssl.SSLObject, server_name: str | None, _: ssl.SSLContext) -> None:
        connection.context = self.current  # one attribute read: the pair is switched as a whole

    def _read_digest(self) -> str | None:
        try:
            ca = self.client_ca.read_bytes() if self.client_ca is not None else b""
            return hashlib.sha256(self.cert.read_bytes() + b"\0" + self.key.read_bytes() + b"\0" + ca).hexdigest()
        except OSError:
            return None

    def check(self) -> bool:
        """Publish the files if they changed and form a valid pair; a half-written pair is retried next time."""
        digest = self._read_digest()
        if digest is None or digest == self._digest:
            return False
        try:
            fresh = server_context(self.cert, self.key, self.client_ca)
        except (ssl.SSLError, OSError) as exc:
            log.warning("new certificate files not loadable yet (%s); keeping the current pair", exc)
            return False
        self.current = fresh
        self._digest = digest
        self.reloads += 1
        log.info("serving certificate reloaded from %s", self.cert)
        return True

    async def watch(self, interval: float = 5.0) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await asyncio.to_thread(self.check)
            except Exception:
                log.exception("certificate watch iteration failed; retrying")
