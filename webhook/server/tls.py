"""Server TLS: 1.2 or newer only, and certificate files reloaded when they change on disk.

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


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(cert), str(key))
    return context


class CertificateReloader:
    def __init__(self, cert: Path, key: Path) -> None:
        self.cert = cert
        self.key = key
        self.reloads = 0
        self._digest = self._read_digest()
        self.current = server_context(cert, key)
        self.context = server_context(cert, key)  # what the listener is built with; never changed after this
        self.context.sni_callback = self._select

    def _select(self, connection: ssl.SSLObject, server_name: str | None, _: ssl.SSLContext) -> None:
        connection.context = self.current  # one attribute read: the pair is switched as a whole

    def _read_digest(self) -> str | None:
        try:
            return hashlib.sha256(self.cert.read_bytes() + b"\0" + self.key.read_bytes()).hexdigest()
        except OSError:
            return None

    def check(self) -> bool:
        """Publish the files if they changed and form a valid pair; a half-written pair is retried next time."""
        digest = self._read_digest()
        if digest is None or digest == self._digest:
            return False
        try:
            fresh = server_context(self.cert, self.key)
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
