"""How long and how many: the bounds that keep slow or hostile clients from holding the server."""

from __future__ import annotations

from webhook.model.quickinit import frozen_dataclass


@frozen_dataclass
class ServerLimits:
    # TLS handshake, then the request line and headers: the API server sends a review in one write
    handshake_seconds: float = 10.0
    header_seconds: float = 10.0
    # the body, once the headers are in (3 MiB over any working network takes well under a second)
    body_seconds: float = 10.0
    # an open connection with no request in progress; below Go's default IdleConnTimeout (net/http's
    # DefaultTransport), so the API server's pool (which reuses connections) is the side that usually closes first
    idle_seconds: float = 60.0
    # one request from its headers to its answer: beyond the API server's webhook maximum (timeouts.MAX_TIMEOUT)
    request_seconds: float = 40.0
    # open connections; at the cap the longest-waiting connection with no request in progress is
    # closed to make room, and a new one is refused only when every connection is busy
    max_connections: int = 1024
    # a body larger than this is decoded in a worker thread, so that the loop keeps answering probes
    thread_decode_bytes: int = 256 * 1024
    # a refused request (400, 401, 408, 413) is answered after this pause: the API server never sends one, so
    # this costs it nothing, while a client flooding malformed reviews down one connection is slowed to a trickle
    refusal_delay_seconds: float = 0.05
    # how often the watchdog looks at connections, and the event-loop lag probe's period
    tick_seconds: float = 0.25
