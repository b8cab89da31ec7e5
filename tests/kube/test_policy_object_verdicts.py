"""The Ready condition of policy objects says what a load judged, and only that: an object that arrives or
changes while a set is loading is judged by the next load, never told "loaded" unseen; a recreated object is
told again. The feed's caches are filled by hand here to stage an arrival between the load's read and its word
(a race the real watch produces only by timing); the status writes go to the test API server."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tests.kube.conftest import FAST
from webhook.kube.policy_objects import POLICY_RESOURCES, PolicyObjectFeed, object_file
from webhook.model.errors import PolicyLoadError

PROFILE_QUOTA = next(r for r in POLICY_RESOURCES if r.kind == "ProfileQuota")


def quota(name: str, gpus: Any, uid: str = "u1", generation: int = 1) -> dict[str, Any]:
    return {"apiVersion": "quartermaster.dev/v1alpha1", "kind": "ProfileQuota",
            "metadata": {"name": name, "uid": uid, "generation": generation},
            "spec": {"classes": {"personal": {"gpus": gpus}}, "defaultClass": "personal"}}


def feed_for(kube_api, kubeconfig) -> PolicyObjectFeed:
    settings = replace(FAST, kubeconfig=kubeconfig, policy_object_groups=("quartermaster.dev",))
    return PolicyObjectFeed(kube_api, settings, lambda _v, _k: True, resources=(PROFILE_QUOTA,))


def ready(apiserver, name: str) -> dict[str, Any] | None:
    obj = apiserver.get("quartermaster.dev/v1alpha1", "ProfileQuota", "", name) or {}
    conditions = (obj.get("status") or {}).get("conditions") or []
    return conditions[0] if conditions else None


def refusal(name: str, message: str) -> dict[str, list[PolicyLoadError]]:
    file = object_file(PROFILE_QUOTA, {"metadata": {"name": name}})
    return {file: [PolicyLoadError(file, 0, None, "metadata.name", message)]}


def test_an_object_that_arrives_during_a_load_is_not_told_it_loaded(apiserver, kube_api, kubeconfig):
    feed = feed_for(kube_api, kubeconfig)
    cache = feed.caches[PROFILE_QUOTA]
    for name in ("first", "late"):
        apiserver.put(quota(name, 1))
    cache.put(quota("first", 1))
    considered = feed.documents()  # the load reads the objects...
    cache.put(quota("late", 1))  # ...one arrives...
    feed.refused(considered, {})  # ...and the load's word names only what it judged
    assert ready(apiserver, "first")["status"] == "True"
    assert ready(apiserver, "late") is None
    feed.refused(feed.documents(), refusal("late", "ProfileQuota 'late' is already defined in late.yaml"))
    told = ready(apiserver, "late")
    assert told["status"] == "False" and "already defined in late.yaml" in told["message"]


def test_an_object_changed_during_a_load_keeps_its_condition_until_judged(apiserver, kube_api, kubeconfig):
    feed = feed_for(kube_api, kubeconfig)
    cache = feed.caches[PROFILE_QUOTA]
    apiserver.put(quota("changing", 1))
    cache.put(quota("changing", 1))
    feed.refused(feed.documents(), {})
    assert ready(apiserver, "changing")["status"] == "True"
    considered = feed.documents()
    cache.put(quota("changing", "one", generation=2))  # edited while the old spec was loading
    feed.refused(considered, {})
    assert ready(apiserver, "changing").get("observedGeneration") == 1
    feed.refused(feed.documents(), refusal("changing", "'one' is not of type 'integer'"))
    told = ready(apiserver, "changing")
    assert told["status"] == "False" and told["observedGeneration"] == 2


def test_a_recreated_object_is_told_again(apiserver, kube_api, kubeconfig):
    feed = feed_for(kube_api, kubeconfig)
    cache = feed.caches[PROFILE_QUOTA]
    words = refusal("dup", "ProfileQuota 'dup' is already defined in dup.yaml")
    apiserver.put(quota("dup", 1))
    cache.put(quota("dup", 1))
    feed.refused(feed.documents(), words)
    assert ready(apiserver, "dup")["status"] == "False"
    cache.delete(quota("dup", 1))
    feed.refused(feed.documents(), {})
    apiserver.put(quota("dup", 1, uid="u2"))  # deleted and applied again: a new object, without status
    cache.put(quota("dup", 1, uid="u2"))
    assert ready(apiserver, "dup") is None
    feed.refused(feed.documents(), words)
    assert ready(apiserver, "dup")["status"] == "False"
