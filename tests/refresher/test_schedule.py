import random

from webhook.refresher.schedule import MIN_DELAY, Schedule, backoff_delay, refresh_delay

SCHEDULE = Schedule(margin=300, jitter=0.2, min_backoff=1, max_backoff=60)


def test_refresh_lands_in_the_jittered_window_before_expiry():
    rng = random.Random(7)
    delays = [refresh_delay(SCHEDULE, now=1000, issued_at=1000, expires_at=1000 + 3600, rng=rng) for _ in range(200)]
    # margin 300 s, jitter up to 60 s more: between 3240 and 3300 s after issue
    assert all(3240 <= d <= 3300 for d in delays)
    assert max(delays) - min(delays) > 30  # really spread, not one value


def test_short_lived_tokens_refresh_at_half_life():
    delay = refresh_delay(Schedule(margin=300, jitter=0), now=0, issued_at=0, expires_at=120, rng=random.Random(1))
    assert delay == 60


def test_an_expired_token_is_retried_soon_but_never_in_a_busy_loop():
    assert refresh_delay(SCHEDULE, now=5000, issued_at=0, expires_at=4000, rng=random.Random(1)) == MIN_DELAY


def test_backoff_grows_and_is_capped():
    rng = random.Random(3)
    ceilings = [max(backoff_delay(SCHEDULE, failures=n, now=0, expires_at=None, rng=rng) for _ in range(50)) for n in (1, 3, 10)]
    assert ceilings[0] <= 1.0 and 2.0 < ceilings[1] <= 4.0 and 30 < ceilings[2] <= 60


def test_backoff_retries_before_a_valid_token_runs_out():
    rng = random.Random(3)
    delays = [backoff_delay(SCHEDULE, failures=10, now=0, expires_at=20, rng=rng) for _ in range(50)]
    assert all(d <= 10 for d in delays)
