"""Informers against a broken or hostile API server, on the wire: lines that are not JSON, events and list
items of the wrong shape, ERROR events of no known shape. The cache is never silently incomplete: the
informer says it is not synced (every policy errors, quota fails closed), relists, and recovers."""

import json
import threading
import time

import pytest

from tests.kube.apiserver import FakeApiServer
from tests.kube.conftest import eventually
from tests.kube.objects import namespace, pod

PODS = ("", "v1", "pods")


def synced_with_pod(apiserver: FakeApiServer, live_state):
    apiserver.put(namespace("jdoe"))
    apiserver.put(pod("a", gpus=1))
    state = live_state(backoff_initial=0.6, backoff_max=0.6)  # long enough to see the unsynced spell
    state.start()
    eventually(lambda: state.synced)
    eventually(lambda: apiserver.watching("pods"))
    return state


@pytest.mark.parametrize("line", [
    b"{not json", b"5", b"[]", b'{"type": "ADDED"}', b'{"type": "ADDED", "object": []}',
    b'{"type": "ADDED", "object": {"metadata": "x"}}', b'{"type": "ADDED", "object": {"metadata": {"namespace": "jdoe"}}}',
    b'{"type": "MODIFIED", "object": {"metadata": {"name": "a", "namespace": "jdoe"}, "spec": "nope"}}',
    b'{"type": "DELETED", "object": {"metadata": {"name": 7, "namespace": "jdoe"}}}',
    b'{"type": 5, "object": {}}', b'{"type": "ERROR", "object": {"message": "no code"}}',
    b'{"type": "ERROR", "object": "gone"}', b'{"type": "SURPRISE", "object": {"metadata": {}}}',
])
def test_an_unreadable_watch_event_unsyncs_relists_and_recovers(apiserver, live_state, line):
    """Before: a line that is not JSON was dropped (the change it carried never reached the cache), the others
    were retried from the same version for ever while each accepted watch counted as progress: /readyz said
    ready on a cache that had stopped following the cluster."""
    state = synced_with_pod(apiserver, live_state)
    informer = state.informers["Pod"]
    apiserver.inject("pods", line)
    eventually(lambda: not state.synced)
    assert "the API server sent" in informer.status().last_error, informer.status()
    # the relist brings back what the broken stream may have carried, then the watch goes on
    eventually(lambda: state.synced and informer.relists >= 2, message=str(informer.status()))
    assert state.get("Pod", "jdoe", "a") is not None
    apiserver.put(pod("later"))
    eventually(lambda: state.get("Pod", "jdoe", "later") is not None)


def test_bookmarks_without_a_version_are_harmless(apiserver, live_state):
    state = synced_with_pod(apiserver, live_state)
    informer = state.informers["Pod"]
    relists = informer.relists
    for line in (b'{"type": "BOOKMARK", "object": {"metadata": {}}}', b'{"type": "BOOKMARK", "object": {}}',
                 b'{"type": "BOOKMARK", "object": {"metadata": "x"}}'):
        apiserver.inject("pods", line)
    apiserver.put(pod("later"))
    eventually(lambda: state.get("Pod", "jdoe", "later") is not None)
    assert state.synced and informer.relists == relists and informer.resource_version


@pytest.mark.parametrize("item", [{"metadata": "x"}, {}, {"metadata": {"name": "b"}},
                                  {"metadata": {"name": "b", "namespace": "jdoe", "labels": {"a": 1}}},
                                  {"metadata": {"name": "b", "namespace": "jdoe"}, "spec": {"containers": "x"}}])
def test_a_list_holding_an_unreadable_object_is_refused_until_it_is_fixed(apiserver, live_state, item):
    """Before: a metadata that is not an object failed every relist with an AttributeError (fine, but the
    error named nothing); the others went into the cache, where quota and policies met them."""
    apiserver.put(namespace("jdoe"))
    apiserver.put(pod("a", gpus=1))
    with apiserver.lock:
        apiserver.objects[(PODS, "jdoe", "zz-bad")] = item
    state = live_state()
    state.start()
    informer = state.informers["Pod"]
    eventually(lambda: "the API server sent a list holding" in informer.status().last_error,
               message=str(informer.status()))
    assert not state.synced
    with apiserver.lock:
        del apiserver.objects[(PODS, "jdoe", "zz-bad")]
    eventually(lambda: state.synced, message=str(informer.status()))
    assert state.get("Pod", "jdoe", "a") is not None


def test_a_server_that_accepts_watches_then_errors_is_reported_stalled(apiserver, live_state):
    """Each accepted watch counted as progress: a server answering every watch with an ERROR 500 event kept the
    informer 'current' for ever. Accepting a watch is progress only when the last one did not fail."""
    apiserver.put(namespace("jdoe"))
    state = live_state(stall_seconds=1.0, backoff_initial=0.05, backoff_max=0.1)
    state.start()
    eventually(lambda: state.synced)
    eventually(lambda: apiserver.watching("pods"))
    error = json.dumps({"type": "ERROR", "object": {"kind": "Status", "code": 500, "reason": "InternalError",
                                                    "message": "etcd is sad"}}).encode()
    apiserver.send_bookmarks = False  # nothing but the errors
    informer = state.informers["Pod"]
    stop = threading.Event()

    def keep_failing() -> None:
        while not stop.is_set():
            apiserver.inject("pods", error)
            time.sleep(0.02)
    injector = threading.Thread(target=keep_failing, daemon=True)
    injector.start()
    try:
        eventually(lambda: informer.status().stalled, timeout=8)
        assert not state.synced and informer.watches > 3, informer.status()
    finally:
        stop.set()
        injector.join()


@pytest.mark.parametrize("item,field", [
    ({"metadata": {"name": "b", "namespace": "jdoe"}, "spec": {"containers": "x"}}, "spec.containers"),
    ({"metadata": {"name": "b", "namespace": "jdoe"},
      "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": [1]}}}]}},
     "limits[nvidia.com/gpu]"),
])
def test_list_items_are_shape_checked_as_their_resources_kind(item, field):
    """A List's items carry no kind (the API server leaves it out): they were checked as objects of no known
    kind, so a pod whose containers were not a list reached the cache from a relist, and only a watch event
    (whose object says its kind) was refused."""
    from webhook.kube.informer import unreadable

    problem = unreadable(item, "Pod", True)
    assert problem is not None and field in problem, problem
    assert unreadable({**item, "kind": "Pod"}, "Pod", True) == problem
