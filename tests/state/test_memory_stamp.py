"""creationTimestamp text, built once a second, is what formatting datetime.now(timezone.utc) gave."""

from __future__ import annotations

import random
from datetime import datetime, timezone

from webhook.state import memory


def test_stamp_is_the_datetime_text(monkeypatch):
    rng = random.Random(3)
    moments = sorted(rng.uniform(0, 4e9) for _ in range(200))
    moments += [1_700_000_000.0, 1_700_000_000.999999, 1_700_000_001.0, 1_699_999_999.5, 1_700_000_000.2]  # back in time too
    for now in moments:
        monkeypatch.setattr(memory.time, "time", lambda now=now: now)
        expected = datetime.fromtimestamp(now, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        assert memory._now_text() == expected, now


def test_stored_objects_get_a_stamp_unless_they_have_one():
    state = memory.InMemoryClusterState([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}},
                                {"apiVersion": "v1", "kind": "Namespace",
                                 "metadata": {"name": "b", "creationTimestamp": "2020-01-01T00:00:00Z"}}])
    stamp = state.get("Namespace", "", "a")["metadata"]["creationTimestamp"]
    written = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    assert abs((datetime.now(timezone.utc) - written).total_seconds()) < 5
    assert state.get("Namespace", "", "b")["metadata"]["creationTimestamp"] == "2020-01-01T00:00:00Z"
