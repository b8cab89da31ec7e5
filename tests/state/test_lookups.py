"""Lookups answered by cluster state: any kind in the standalone store, informer kinds in live mode."""

import pytest

from webhook.model.lookups import NO_LOOKUPS, LookupRefused
from webhook.state.lookups import StateLookups
from webhook.state.memory import InMemoryClusterState

SEED = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: limits, namespace: jdoe, labels: {tier: gold}}
data: {max: "3"}
---
apiVersion: v1
kind: Secret
metadata: {name: token, namespace: jdoe}
data: {token: c2VjcmV0}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: jdoe, labels: {tier: bronze}}
spec: {replicas: 1}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: viewer}
"""


@pytest.fixture
def state(tmp_path):
    (tmp_path / "seed.yaml").write_text(SEED)
    return InMemoryClusterState.from_directory(tmp_path)


def test_the_standalone_state_holds_any_kind(state):
    assert state.lookups.get("v1", "ConfigMap", "jdoe", "limits")["data"] == {"max": "3"}
    assert state.lookups.get("apps/v1", "Deployment", "jdoe", "web")["spec"] == {"replicas": 1}
    assert state.lookups.get("rbac.authorization.k8s.io/v1", "ClusterRole", "", "viewer") is not None
    assert state.lookups.get("v1", "ConfigMap", "jdoe", "missing") is None


def test_secrets_are_held_without_their_data(state):
    secret = state.lookups.get("v1", "Secret", "jdoe", "token")
    assert secret["metadata"]["name"] == "token" and "data" not in secret


def test_the_api_group_must_match_the_version_need_not(state):
    assert state.lookups.get("extensions/v1beta1", "Deployment", "jdoe", "web") is None
    assert state.lookups.get("apps/v1beta2", "Deployment", "jdoe", "web") is not None


def test_list_by_namespace_and_label_selector(state):
    assert [o["metadata"]["name"] for o in state.lookups.list("v1", "ConfigMap", "jdoe")] == ["limits"]
    assert state.lookups.list("v1", "ConfigMap", "other") == []
    gold = state.lookups.list("v1", "ConfigMap", selector={"matchLabels": {"tier": "gold"}})
    assert [o["metadata"]["name"] for o in gold] == ["limits"]
    assert state.lookups.list("apps/v1", "Deployment", "jdoe", {"matchLabels": {"tier": "gold"}}) == []
    with pytest.raises(LookupRefused, match="invalid label selector"):
        state.lookups.list("v1", "ConfigMap", selector={"matchExpressions": [{"key": "a", "operator": "Maybe"}]})


def test_what_no_state_can_answer_is_refused_clearly(state):
    with pytest.raises(LookupRefused, match="global context entry 'images'"):
        state.lookups.global_context("images")
    with pytest.raises(LookupRefused, match="HTTP call GET https://example.org"):
        state.lookups.http("GET", "https://example.org")
    with pytest.raises(LookupRefused, match="image data for nginx"):
        state.lookups.image_data("nginx")
    with pytest.raises(LookupRefused):
        NO_LOOKUPS.get("v1", "ConfigMap", "jdoe", "limits")


def test_a_state_that_does_not_hold_a_kind_refuses_it():
    held = InMemoryClusterState([{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"}}])
    lookups = StateLookups(held.get, held.list, lambda kind: kind == "Pod", "the live cluster cache (informers for Pod)")
    assert lookups.get("v1", "Pod", "n", "p") is not None
    with pytest.raises(LookupRefused, match="holds no ConfigMap objects"):
        lookups.get("v1", "ConfigMap", "n", "c")
    with pytest.raises(LookupRefused, match="holds no ConfigMap objects"):
        lookups.list("v1", "ConfigMap")


def test_admitted_objects_of_any_kind_are_recorded():
    state = InMemoryClusterState()
    state.record_admitted({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}}, "CREATE")
    assert state.lookups.get("v1", "ConfigMap", "n", "c")["metadata"]["uid"]
