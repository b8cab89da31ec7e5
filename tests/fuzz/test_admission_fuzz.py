"""Property: whatever arrives at /mutate or /validate, the real HTTPS server answers 200, 400 or 413, never
hangs, leaves no quota reservation behind, and stays healthy. 100 batches of 100 mutated reviews (10,000)
of every kind the chart registers, sent concurrently over eight connections."""

import asyncio
import json

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.fuzz.support import body_from_seed, raw_body, seed_reviews, start_threaded
from tests.support import REPO, review
from tests.platform.quota.builders import pod

BATCHES, BATCH = 100, 100
SEEDS = seed_reviews()
# most reviews are mutated from an integer hypothesis draws (cheap to draw); a few per
# batch are drawn value by value through hypothesis strategies, so that shrinking finds small examples
ENDPOINTS = st.sampled_from(["/mutate", "/validate"])
CHEAP = st.tuples(ENDPOINTS, st.integers(0, 2**64 - 1).map(lambda n: body_from_seed(SEEDS, n)))
DRAWN = st.tuples(ENDPOINTS, raw_body(SEEDS))
REQUESTS = st.tuples(st.lists(CHEAP, min_size=BATCH - 5, max_size=BATCH - 5), st.lists(DRAWN, min_size=5, max_size=5)).map(
    lambda parts: parts[0] + parts[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    threaded, stop = start_threaded(REPO / "policies", REPO / "examples" / "state", tmp_path_factory.mktemp("fuzz"))
    yield threaded
    stop()


def _check_answer(status: int, body: bytes, sent: bytes) -> None:
    assert status in (200, 400, 413), (status, body[:300], sent[:300])
    if status == 200:
        answer = json.loads(body)
        assert answer["kind"] == "AdmissionReview" and isinstance(answer["response"]["allowed"], bool)
        assert answer["response"]["uid"] == json.loads(sent)["request"]["uid"]
    else:
        assert json.loads(body)["error"]


def _left_behind(qm) -> list[str]:
    """Reservations still in flight (pending() drops the ones the state reflects and the expired ones)."""
    state = qm.state
    return [f"{r.key} update={r.update}" for ledger in qm.ledgers.all()
            for scope in list(ledger._reservations) for r in ledger.pending(scope, state)]


def test_fuzzed_reviews_get_200_400_or_413_and_leave_nothing_behind(server):
    sent = {"count": 0}

    @settings(max_examples=BATCHES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
    @given(REQUESTS)
    def property_(requests):
        answers = server.post_all(requests)  # raises TimeoutError on a hang
        for (_, body), (status, answer) in zip(requests, answers):
            _check_answer(status, answer, body)
        sent["count"] += len(requests)

    property_()
    assert sent["count"] >= 10_000
    qm = server.server.qm
    assert server.run(_eventually_nothing_left(qm)) == []
    status, _ = server.run(server.server.get("/healthz"))
    assert status == 200
    probe = review(pod("after-fuzz", ns="default"), dry_run=True)
    assert server.run(server.server.admit("/validate", probe))["allowed"] is True


async def _eventually_nothing_left(qm) -> list[str]:
    """An admitted create is reserved until the state shows it; standalone state shows it at once."""
    for _ in range(50):
        if not _left_behind(qm):
            break
        await asyncio.sleep(0.1)
    return _left_behind(qm)
