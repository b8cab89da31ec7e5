"""Server TLS: 1.2 or newer only, and certificate files reloaded in place when they change on disk.

Reloading loads the new pair into the same SSLContext: new handshakes get the new certificate,
established connections keep theirs, nothing is restarted or dropped.
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
    def __init__(self, context: ssl.SSLContext, cert: Path, key: Path) -> None:
        self.context = context
        self.cert = cert
        self.key = key
        self.reloads = 0
        self._digest = self._read_digest()

    def _read_digest(self) -> str | None:
        try:
            return hashlib.sha256(self.cert.read_bytes() + b"\0" + self.key.read_bytes()).hexdigest()
        except OSError:
            return None

    def check(self) -> bool:
        """Reload if the files changed and form a valid pair; a half-written pair is retried next time."""
        digest = self._read_digest()
        if digest is None or digest == self._digest:
            return False
        try:
            self.context.load_cert_chain(str(self.cert), str(self.key))
        except (ssl.SSLError, OSError) as exc:
            log.warning("new certificate files not loadable yet (%s); keeping the current pair", exc)
            return False
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
