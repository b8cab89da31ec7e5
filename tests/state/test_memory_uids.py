"""Stored objects get uids that look like the API server's (random version-4 UUIDs) and never repeat."""

from __future__ import annotations

import multiprocessing
import uuid

from webhook.state import memory
from webhook.state.memory import InMemoryClusterState


def _pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "n"}, "spec": {}}


def test_admitted_objects_get_distinct_rfc4122_version4_uids():
    state = InMemoryClusterState()
    for index in range(2000):
        state.record_admitted(_pod(f"p{index}"), "CREATE")
    uids = [obj["metadata"]["uid"] for obj in state.list("Pod", "n")]
    assert len(set(uids)) == 2000
    for text in uids:
        parsed = uuid.UUID(text)
        assert str(parsed) == text and parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_a_uid_given_is_kept():
    state = InMemoryClusterState()
    pod = _pod("p")
    pod["metadata"]["uid"] = "given"
    state.record_admitted(pod, "CREATE")
    assert state.get("Pod", "n", "p")["metadata"]["uid"] == "given"


def test_the_counter_wraps_within_its_48_bits():
    uids = memory._Uids()
    uids.counter = iter([2**48 - 1, 2**48])
    assert uids().endswith("-ffffffffffff") and uids().endswith("-000000000000")


def _child_uid(queue) -> None:
    queue.put(memory.new_uid())


def test_a_forked_process_draws_its_own_uids():
    """Two forked replicas (or workers) must not hand out the same uids as the parent from the same counter."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_uid, args=(queue,))
    child.start()
    theirs = queue.get(timeout=30)
    child.join(30)
    ours = memory.new_uid()
    assert theirs[:24] != ours[:24] and uuid.UUID(theirs).version == 4
