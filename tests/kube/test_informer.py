"""Informers through the real `kubernetes` client against the test API server: list, watch, relist."""

from tests.kube.apiserver import FakeApiServer, is_watch
from tests.kube.conftest import eventually
from tests.kube.objects import claim_template, namespace, pod, profile, pvc


def seed(apiserver: FakeApiServer) -> None:
    apiserver.put(namespace("jdoe"))
    apiserver.put(namespace("kube-system", profile=False))
    apiserver.put(pod("a", gpus=1))
    apiserver.put(pod("b"))
    apiserver.put(pvc("data"))
    apiserver.put(claim_template("gpu-1"))
    apiserver.put(profile("jdoe", gpus="2"))


def test_initial_sync_lists_every_kind(apiserver, live_state):
    seed(apiserver)
    state = live_state()
    assert not state.synced  # nothing listed before start
    state.start()
    eventually(lambda: state.synced, message=str(state.sync_details()))
    stored = state.get("Pod", "jdoe", "a")
    # list items come without apiVersion/kind from the API server; the state adds them back
    assert stored["kind"] == "Pod" and stored["apiVersion"] == "v1"
    assert stored["metadata"]["uid"] == apiserver.get("v1", "Pod", "jdoe", "a")["metadata"]["uid"]
    assert sorted(p["metadata"]["name"] for p in state.list("Pod", "jdoe")) == ["a", "b"]
    assert state.list("Pod", "elsewhere") == []
    assert state.get("PersistentVolumeClaim", "jdoe", "data")["spec"]["resources"]["requests"]["storage"] == "10Gi"
    assert state.get("ResourceClaimTemplate", "jdoe", "gpu-1")["apiVersion"] == "resource.k8s.io/v1"
    assert state.get("Namespace", "", "kube-system") is not None
    assert state.get("Profile", "", "jdoe")["spec"]["resourceQuotaSpec"]["hard"] == {"requests.nvidia.com/gpu": "2"}
    assert {s.kind: s.relists for s in state.statuses()} == {k: 1 for k in (
        "Namespace", "Pod", "PersistentVolumeClaim", "ResourceClaim", "ResourceClaimTemplate", "Profile", "StatefulSet",
        "Notebook")}
    # then each watches from the version it listed (the watch request follows the list)
    eventually(lambda: {"pods", "namespaces", "persistentvolumeclaims", "resourceclaims", "resourceclaimtemplates",
                        "profiles"} <= {s.plural for s in apiserver.seen("GET", watch=True)})
    assert all(s.query.get("allowWatchBookmarks") == "true" and s.query.get("resourceVersion")
               for s in apiserver.seen("GET", watch=True))


def test_watch_events_reach_the_state(apiserver, live_state):
    apiserver.put(namespace("jdoe"))
    state = live_state()
    state.start()
    eventually(lambda: state.synced)
    apiserver.put(pod("new", gpus=2))
    eventually(lambda: state.get("Pod", "jdoe", "new"))
    apiserver.put(pod("new", gpus=2, labels={"stage": "two"}))
    eventually(lambda: state.get("Pod", "jdoe", "new")["metadata"]["labels"] == {"stage": "two"})
    apiserver.remove(pod("new"))
    eventually(lambda: state.get("Pod", "jdoe", "new") is None)
    assert state.informers["Pod"].relists == 1  # all of it through the watch


def test_bookmarks_move_the_resource_version_on(apiserver, live_state):
    state = live_state()
    state.start()
    eventually(lambda: state.synced)
    for index in range(3):
        apiserver.put(namespace(f"other-{index}"))  # changes elsewhere move the global resourceVersion
    informer = state.informers["Pod"]
    eventually(lambda: informer.resource_version == str(apiserver.rv), message=informer.resource_version)


def test_410_gone_relists_and_catches_up(apiserver, live_state):
    seed(apiserver)
    state = live_state()
    state.start()
    eventually(lambda: state.synced)
    # the next pod watch is held while the history it would resume from is compacted away
    eventually(lambda: apiserver.watching("pods"))
    apiserver.hang = lambda method, plural, query: plural == "pods" and is_watch(query)
    before = len(apiserver.seen("GET", "pods", watch=True))
    apiserver.drop_watches()
    eventually(lambda: len(apiserver.seen("GET", "pods", watch=True)) > before)
    apiserver.remove(pod("a"))
    apiserver.put(pod("c"))
    apiserver.compact()
    apiserver.hang = None
    informer = state.informers["Pod"]
    eventually(lambda: informer.relists == 2, message=str(informer.status()))
    eventually(lambda: state.get("Pod", "jdoe", "c") is not None)
    assert state.get("Pod", "jdoe", "a") is None  # the deletion we never saw as an event
    apiserver.put(pod("d"))  # and watching goes on from the relisted version
    eventually(lambda: state.get("Pod", "jdoe", "d") is not None)
    assert state.synced


def test_dropped_watch_resumes_without_relisting(apiserver, live_state):
    seed(apiserver)
    state = live_state()
    state.start()
    eventually(lambda: state.synced)
    informer = state.informers["Pod"]
    eventually(lambda: apiserver.watching("pods"))
    watches = informer.watches
    apiserver.drop_watches()  # the connection breaks mid-stream
    apiserver.put(pod("after-drop"))
    eventually(lambda: state.get("Pod", "jdoe", "after-drop") is not None)
    assert informer.relists == 1 and informer.watches > watches
    resumed = apiserver.seen("GET", "pods", watch=True)[-1]
    assert int(resumed.query["resourceVersion"]) > 100


def test_profile_crd_absent_then_installed(apiserver, live_state):
    apiserver.absent.add(("kubeflow.org", "v1", "profiles"))
    apiserver.put(profile("jdoe"))
    state = live_state()
    state.start()
    eventually(lambda: state.synced, message=str(state.sync_details()))
    assert state.sync_details()["Profile"]["absent"] is True
    assert state.get("Profile", "", "jdoe") is None
    apiserver.absent.clear()  # the CRD gets installed
    eventually(lambda: state.get("Profile", "", "jdoe") is not None)
    assert state.sync_details()["Profile"]["absent"] is False


def test_a_stalled_watch_is_reported_and_recovers(apiserver, live_state):
    state = live_state()
    state.start()
    eventually(lambda: state.synced)
    eventually(lambda: apiserver.watching("pods"))
    apiserver.hang = lambda method, plural, query: plural == "pods"
    apiserver.drop_watches()
    eventually(lambda: not state.synced, message="a watch that makes no progress must make the state unsynced")
    details = state.sync_details()
    assert details["Pod"]["stalled"] is True and details["Pod"]["synced"] is True
    assert details["Namespace"]["stalled"] is False
    apiserver.hang = None
    eventually(lambda: state.synced, message=str(state.sync_details()))


def test_wrong_credentials_never_sync(apiserver, tmp_path, calls):
    from dataclasses import replace

    from tests.kube.conftest import FAST
    from webhook.kube.client import KubeApi
    from webhook.kube.state import LiveClusterState

    api = KubeApi.connect(apiserver.kubeconfig(tmp_path / "bad", token="wrong"), in_cluster=False)
    state = LiveClusterState(api, replace(FAST), calls)
    state.start()
    try:
        eventually(lambda: "401" in state.sync_details()["Pod"]["lastError"])
        assert not state.synced
    finally:
        state.stop()
        api.close()


def test_a_quiet_watch_without_bookmarks_is_renewed_not_stalled(apiserver, live_state):
    apiserver.send_bookmarks = False
    state = live_state(watch_idle_seconds=0.3, stall_seconds=1.5)
    state.start()
    eventually(lambda: state.synced)
    informer = state.informers["Pod"]
    # nothing happens for several idle periods, longer than stall_seconds in total
    eventually(lambda: informer.watches >= 8, message=str(informer.status()))
    assert state.synced and not informer.status().stalled and informer.relists == 1
    apiserver.put(pod("late"))
    eventually(lambda: state.get("Pod", "jdoe", "late") is not None)


def test_policies_look_up_what_the_informers_hold_and_nothing_else(apiserver, live_state):
    import pytest

    from webhook.model.lookups import LookupRefused

    seed(apiserver)
    state = live_state()
    state.start()
    eventually(lambda: state.synced)
    assert state.lookups.get("v1", "Pod", "jdoe", "a")["metadata"]["name"] == "a"
    assert [p["metadata"]["name"] for p in state.lookups.list("v1", "PersistentVolumeClaim", "jdoe")] == ["data"]
    with pytest.raises(LookupRefused, match="live cluster cache .* holds no ConfigMap objects"):
        state.lookups.get("v1", "ConfigMap", "jdoe", "settings")
    assert not any(s.plural == "configmaps" for s in apiserver.seen("GET"))  # refused, never fetched


def test_a_large_list_is_read_in_pages_and_pods_are_kept_packed(apiserver, live_state):
    """A large cluster's pods are never decoded all at once: the informer pages its list (limit/continue, as
    client-go's reflector does) and the cache keeps each pod packed, reading back what was listed."""
    seed(apiserver)
    for index in range(7):
        apiserver.put(pod(f"many-{index}"))
    state = live_state(list_page_size=3)
    state.start()
    eventually(lambda: state.synced, message="never synced")
    pod_lists = [s for s in apiserver.seen("GET", "pods", watch=False) if "limit" in s.query]
    # 9 pods in pages of 3: the first page, then from the 4th and the 7th (the fake's token is "offset:version")
    assert [s.query.get("continue", "").split(":")[0] for s in pod_lists] == ["", "3", "6"]
    assert all(s.query["limit"] == "3" for s in pod_lists)
    names = sorted(p["metadata"]["name"] for p in state.list("Pod"))
    assert names == sorted(["a", "b", *(f"many-{i}" for i in range(7))])
    cache = state.caches["Pod"]
    assert cache.packed and all(type(v) is bytes for objs in cache._by_namespace.values() for v in objs.values())
    assert state.get("Pod", "jdoe", "a")["spec"] == apiserver.get("v1", "Pod", "jdoe", "a")["spec"]
    assert not state.caches["Namespace"].packed
