"""The refresh loop: get a token, write it, sleep until it needs replacing; back off on IdP errors.

"Ready" means the token file holds an unexpired token. An IdP outage is survived while the old
token lasts: the file stays, retries back off, and readiness drops only when the token expires.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from pathlib import Path
from typing import Callable

from webhook.model.quickinit import frozen_dataclass
from webhook.refresher.idp import IdentityProvider, IdpError, IssuedToken
from webhook.refresher.metrics import RefresherMetrics
from webhook.refresher.schedule import Schedule, backoff_delay, refresh_delay
from webhook.refresher.tokenfile import TokenFileError, eos_token_content, mark_ready, write_token_file

log = logging.getLogger("quartermaster.token_refresher")


@frozen_dataclass
class Output:
    token_file: Path
    ready_file: Path | None
    oauth_url: str | None  # None: the IdP's userinfo endpoint without its scheme
    audience: str | None   # set: exchange each access token for one with this audience


class Refresher:
    def __init__(self, idp: IdentityProvider, output: Output, schedule: Schedule, metrics: RefresherMetrics, *,
                 clock: Callable[[], float] = time.time, rng: random.Random | None = None) -> None:
        self._idp, self._output, self._schedule, self._metrics = idp, output, schedule, metrics
        self._clock = clock
        self._rng = rng or random.Random()
        self._expires_at: float | None = None
        self._failures = 0

    @property
    def ready(self) -> bool:
        return self._expires_at is not None and self._clock() < self._expires_at

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            delay = self.step()
            stop.wait(delay)
        mark_ready(self._output.ready_file, False)

    def step(self) -> float:
        """One refresh attempt; returns how long to wait before the next one."""
        started = self._clock()
        try:
            token = self._fetch()
            self._write(token)
        except (IdpError, TokenFileError) as exc:
            return self._failed(exc, started)
        self._failures = 0
        self._metrics.consecutive_failures.set(0)
        delay = refresh_delay(self._schedule, now=self._clock(), issued_at=started,
                              expires_at=token.expires_at, rng=self._rng)
        log.info("token written to %s, valid for %.0fs, next refresh in %.1fs",
                 self._output.token_file, token.expires_at - self._clock(), delay)
        return delay

    def _fetch(self) -> IssuedToken:
        token = self._counted("refresh_token", self._idp.refresh)
        if self._output.audience:
            token = self._counted("token_exchange", lambda: self._idp.exchange(token, self._output.audience))
        return token

    def _counted(self, grant: str, call: Callable[[], IssuedToken]) -> IssuedToken:
        try:
            token = call()
        except IdpError:
            self._metrics.refreshes.labels(grant=grant, result="error").inc()
            raise
        self._metrics.refreshes.labels(grant=grant, result="success").inc()
        return token

    def _write(self, token: IssuedToken) -> None:
        oauth_url = self._output.oauth_url or _without_scheme(self._idp.endpoints.userinfo if self._idp.endpoints else None)
        if not oauth_url:
            raise TokenFileError("the IdP publishes no userinfo_endpoint: pass --oauth-url")
        write_token_file(self._output.token_file, eos_token_content(token.access_token, oauth_url))
        self._expires_at = token.expires_at
        mark_ready(self._output.ready_file, True)
        self._metrics.expiry.set(token.expires_at)
        self._metrics.last_success.set(self._clock())
        self._metrics.ready.set(1)

    def _failed(self, exc: Exception, started: float) -> float:
        self._failures += 1
        self._metrics.consecutive_failures.set(self._failures)
        if not self.ready:
            mark_ready(self._output.ready_file, False)
            self._metrics.ready.set(0)
        permanent = isinstance(exc, IdpError) and exc.permanent
        delay = self._schedule.max_backoff if permanent else backoff_delay(
            self._schedule, failures=self._failures, now=started, expires_at=self._expires_at, rng=self._rng)
        log.warning("%s; %s; retrying in %.1fs%s", exc,
                    "the current token stays valid" if self.ready else "no valid token",
                    delay, " (needs new credentials: log in again)" if permanent else "")
        return delay


def _without_scheme(url: str | None) -> str | None:
    # EOS names its OAuth resources without a scheme (eos vid set map -oauth2 key:<host>/<path>)
    return url.split("://", 1)[1] if url and "://" in url else url
