"""When to refresh next: ahead of expiry with jitter, and backoff after IdP errors.

Jitter spreads the refreshes of many notebooks that started together (a node reboot, a platform
upgrade) so they do not hit the IdP in the same second. Backoff never waits past the moment the
current token needs replacing: a retry that lands after expiry would leave EOS without a token.
"""

from __future__ import annotations

import random

from webhook.model.quickinit import frozen_dataclass

MIN_DELAY = 1.0  # never spin on the IdP, even with a token that is about to expire


@frozen_dataclass
class Schedule:
    margin: float = 300.0     # refresh this long before expiry...
    jitter: float = 0.2       # ...and up to this fraction of the margin earlier, at random
    min_backoff: float = 1.0
    max_backoff: float = 60.0


def refresh_delay(schedule: Schedule, *, now: float, issued_at: float, expires_at: float, rng: random.Random) -> float:
    """Seconds from `now` until the next refresh of a token valid from `issued_at` to `expires_at`."""
    lifetime = max(expires_at - issued_at, 0.0)
    # a short-lived token (shorter than twice the margin) is refreshed at half its life, not at once
    lead = min(schedule.margin, lifetime / 2)
    lead += rng.uniform(0.0, schedule.jitter * lead)
    return max(expires_at - lead - now, MIN_DELAY)


def backoff_delay(schedule: Schedule, *, failures: int, now: float, expires_at: float | None, rng: random.Random) -> float:
    """Exponential backoff with full jitter after `failures` consecutive errors (1 = the first)."""
    ceiling = min(schedule.max_backoff, schedule.min_backoff * 2 ** max(failures - 1, 0))
    delay = max(rng.uniform(schedule.min_backoff, max(ceiling, schedule.min_backoff)), MIN_DELAY)
    if expires_at is not None and expires_at - now > MIN_DELAY:
        # while the old token is valid, retry before it runs out rather than after
        delay = min(delay, max((expires_at - now) / 2, MIN_DELAY))
    return delay
