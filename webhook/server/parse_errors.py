"""aiohttp's server log, with the requests its HTTP parser refuses made one quiet, counted line.

aiohttp logs each request its parser refuses (a bad header, an over-long line, a broken chunk) with a full
traceback at error level. Anyone who reaches the port can send such bytes, so each would be an error
traceback in the webhook's log, as many as they care to send. Here each is counted in
`quartermaster_malformed_requests` (endpoint `http`: refused before any endpoint was known) and logged as one
warning line, reason and peer, at most once per kind of refusal per window (the next line says how many it
stands for). Everything else aiohttp logs passes through unchanged.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

from aiohttp.http_exceptions import HttpProcessingError

from webhook.observability.logs import RepeatWindow
from webhook.observability.metrics import Metrics

ENDPOINT = "http"  # the malformed-request metric's endpoint label for what the parser refused
_REASON_CHARS = 120
_UNPRINTABLE = re.compile(r"[^\x20-\x7e]")
_QUOTED = re.compile(r"""\s*b['"]""")  # where a message starts quoting the request's bytes

log = logging.getLogger(__name__)


def parse_reason(exc: HttpProcessingError) -> str:
    """The parser's own wording: the first line of its message, without the request's bytes it quotes."""
    lines = (exc.message or "").strip().splitlines()
    first = _QUOTED.split(lines[0])[0].rstrip(": ") if lines else ""
    return _UNPRINTABLE.sub("?", first or type(exc).__name__)[:_REASON_CHARS]


class ParserRefusalLog(logging.LoggerAdapter):  # type: ignore[type-arg]
    """The logger aiohttp's request handler is given (AppRunner's `logger`): it calls `exception` and `debug`."""

    def __init__(self, metrics: Metrics, window_seconds: float = 60.0) -> None:
        super().__init__(logging.getLogger("aiohttp.server"), {})
        self.metrics = metrics
        self._window = RepeatWindow(seconds=window_seconds)

    def exception(self, msg: object, *args: Any, exc_info: Any = True, **kwargs: Any) -> None:
        if isinstance(exc_info, HttpProcessingError):
            self._refused(exc_info, args)
        else:
            super().exception(msg, *args, exc_info=exc_info, **kwargs)

    def debug(self, msg: object, *args: Any, **kwargs: Any) -> None:
        # aiohttp logs a garbled first request (TLS or noise on the port) at debug, with its traceback
        exc = kwargs.get("exc_info")
        if isinstance(exc, HttpProcessingError):
            self._refused(exc, args)
        else:
            super().debug(msg, *args, **kwargs)

    def _refused(self, exc: HttpProcessingError, args: tuple[Any, ...]) -> None:
        status = exc.code if 400 <= exc.code < 500 else 400
        self.metrics.malformed(ENDPOINT, status)
        folded = self._window.take((type(exc).__name__,), time.monotonic())
        if folded is None:
            return
        peer = str(args[0]) if args else "unknown"  # aiohttp's "Error handling request from %s", request.remote
        more = f"; {folded} more like it since the last line" if folded else ""
        log.warning("malformed HTTP from %s refused with %d: %s%s", peer, status, parse_reason(exc), more,
                    extra={"peer": peer, "status": status, "endpoint": ENDPOINT})
