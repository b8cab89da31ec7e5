"""state.deletion: what a DELETE or UPDATE leaves of a stored object, as the API server decides it."""

from webhook.state.deletion import deleted, updated


def _pod(node="node-1", phase="Running", grace=None, **meta):
    spec = {"containers": [{"name": "main", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "jdoe", **meta}, "spec": spec,
            "status": {"phase": phase}}


def test_pods_without_a_grace_period_go_at_once():
    assert deleted(_pod(node="")).remaining is None  # never scheduled
    assert deleted(_pod(phase="Succeeded")).remaining is None
    assert deleted(_pod(grace=0)).remaining is None
    assert deleted(_pod(), {"gracePeriodSeconds": 0}).remaining is None


def test_a_running_pod_is_marked_with_its_grace_period_and_can_only_be_shortened():
    marked = deleted(_pod()).remaining
    assert marked["metadata"]["deletionTimestamp"] and marked["metadata"]["deletionGracePeriodSeconds"] == 30
    again = deleted(marked, {"gracePeriodSeconds": 60}).remaining
    assert again["metadata"]["deletionGracePeriodSeconds"] == 30
    assert deleted(marked, {"gracePeriodSeconds": 0}).remaining is None


def test_finalizers_keep_any_object_until_an_update_takes_the_last_off():
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "c", "namespace": "jdoe", "finalizers": ["example.com/keep"]}, "spec": {}}
    marked = deleted(claim).remaining
    assert marked is not None and marked["metadata"]["deletionGracePeriodSeconds"] == 0
    still = updated(marked, {**marked, "metadata": {**marked["metadata"], "finalizers": ["example.com/keep"]}})
    assert still.remaining is not None
    assert updated(marked, {**claim, "metadata": {"name": "c", "namespace": "jdoe"}}).remaining is None


def test_an_allocated_claim_counts_as_protected_even_without_its_finalizer():
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"}, "spec": {},
             "status": {"reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}}
    assert deleted(claim).remaining is not None


def test_an_update_keeps_the_stored_deletion_marks():
    stored = _pod()
    forged = _pod(deletionTimestamp="2026-01-01T00:00:00Z", deletionGracePeriodSeconds=0)
    kept = updated(stored, forged).remaining
    assert kept is not None and "deletionTimestamp" not in kept["metadata"]
