import pytest

from webhook.state.memory import InMemoryClusterState, StateSeedError
from tests.kinds import pod
from tests.support import REPO


def test_seed_from_examples():
    state = InMemoryClusterState.from_directory(REPO / "examples" / "state")
    ns = state.get("Namespace", "", "jdoe")
    assert ns["metadata"]["annotations"]["owner"] == "jdoe@example.org"
    assert state.get("Profile", "", "jdoe") is not None
    assert {n["metadata"]["name"] for n in state.list("Namespace")} >= {"jdoe", "ml-team", "default"}


def test_seed_errors(tmp_path):
    with pytest.raises(StateSeedError, match="no such file"):
        InMemoryClusterState.from_directory(tmp_path / "missing")
    (tmp_path / "bad.yaml").write_text("kind: Pod\nmetadata: {}\n")
    with pytest.raises(StateSeedError, match="metadata.name"):
        InMemoryClusterState.from_directory(tmp_path)


def test_seed_reads_lists(tmp_path):
    (tmp_path / "l.yaml").write_text("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: a}\n")
    assert InMemoryClusterState.from_directory(tmp_path).get("Namespace", "", "a")


async def test_record_create_and_delete():
    state = InMemoryClusterState()
    state.record_admitted(pod("a"), "CREATE")
    stored = state.get("Pod", "jdoe", "a")
    assert stored["metadata"]["uid"] and stored["metadata"]["resourceVersion"] and stored["metadata"]["creationTimestamp"]
    assert [p["metadata"]["name"] for p in state.list("Pod", "jdoe")] == ["a"]
    assert state.list("Pod", "other") == []
    state.record_deleted("Pod", "jdoe", "a")
    assert state.get("Pod", "jdoe", "a") is None


async def test_create_already_exists_is_success():
    state = InMemoryClusterState()
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "t", "namespace": "n"}}
    first = await state.create(obj, timeout=1)
    second = await state.create(obj, timeout=1)
    assert first.created and not second.created and second.object["metadata"]["uid"] == first.object["metadata"]["uid"]


async def test_generate_name():
    state = InMemoryClusterState()
    p = pod("")
    p["metadata"] = {"generateName": "nb-", "namespace": "jdoe"}
    state.record_admitted(p, "CREATE")
    (stored,) = state.list("Pod", "jdoe")
    assert stored["metadata"]["name"].startswith("nb-") and len(stored["metadata"]["name"]) > 3


def test_reloads_leave_no_listener_behind():
    """Each policy reload builds a new quota index that subscribes to the state; replaced ones must go."""
    import gc

    from webhook.platform.quota.index import _StateUsage, _weak_listener
    from webhook.state.memory import InMemoryClusterState

    state = InMemoryClusterState()
    kept = []
    for generation in range(5):
        usage = _StateUsage.__new__(_StateUsage)
        state.add_listener(*_weak_listener(usage))
        if generation == 4:
            kept.append(usage)
        del usage
        gc.collect()
    assert len(state._listeners) <= 2  # the live index's, and at most one not yet pruned
    state.add_listener(lambda kind, event, obj: None)
    assert len(state._listeners) == 2 and kept
