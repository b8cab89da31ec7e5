"""/metrics, /healthz and /readyz for the refresher, on the standard library's HTTP server.

A thread of its own keeps the endpoints answering while the loop sleeps or waits for the IdP.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from prometheus_client.exposition import CONTENT_TYPE_LATEST

from webhook.refresher.metrics import RefresherMetrics


def parse_address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not port.isdigit():
        raise ValueError(f"--metrics-address {text!r} must be host:port")
    return host or "0.0.0.0", int(port)


def start_status_server(address: str, metrics: RefresherMetrics, ready: Callable[[], bool]) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            if self.path == "/metrics":
                self._answer(200, metrics.exposition(), CONTENT_TYPE_LATEST)
            elif self.path == "/healthz":
                self._answer(200, b"ok\n")
            elif self.path == "/readyz":
                ok = ready()
                self._answer(200 if ok else 503, b"ok\n" if ok else b"no valid token\n")
            else:
                self._answer(404, b"not found\n")

        def _answer(self, code: int, body: bytes, content_type: str = "text/plain; charset=utf-8") -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:  # probes every few seconds would flood the log
            pass

    server = ThreadingHTTPServer(parse_address(address), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="refresher-status", daemon=True).start()
    return server
