"""The Ready verdict on a policy object lands where the kind's CRD keeps conditions, so the API server keeps
it. Kyverno's CEL policy kinds (policies.kyverno.io ValidatingPolicy, MutatingPolicy) have no top-level
`status.conditions`: their CRD keeps conditions under `status.conditionStatus` (beside `ready`), and the API
server prunes any field the schema does not name. Found by Kyverno's chainsaw tests
(load-tests/kyverno_chainsaw.py), whose readiness steps read `status.conditionStatus.ready`."""

from __future__ import annotations

from typing import Any, Mapping

from tests.support import merge_patch
from webhook.kube.cache import ObjectCache
from webhook.kube.policy_objects import PolicyObjectFeed, object_file
from webhook.kube.resources import ResourceType
from webhook.kube.settings import LiveSettings
from webhook.model.errors import PolicyLoadError

CONDITION = {"type": "object", "required": ["lastTransitionTime", "message", "reason", "status", "type"],
             "properties": {k: {} for k in ("lastTransitionTime", "message", "observedGeneration", "reason",
                                             "status", "type")}}
# The status schemas of the CRDs (Kyverno v1.19.1 config/crds/), down to the fields a condition uses
STATUS_SCHEMAS = {
    "ValidatingPolicy": {"properties": {"autogen": {}, "generated": {}, "conditionStatus": {"properties": {
        "conditions": {"items": CONDITION}, "message": {}, "ready": {}}}}},
    "ClusterPolicy": {"properties": {"autogen": {}, "conditions": {"items": CONDITION}, "ready": {},
                                     "rulecount": {}, "validatingadmissionpolicy": {}}},
}


def pruned(value: Any, schema: Mapping[str, Any]) -> Any:
    """What the API server stores of `value` under a structural schema: unknown fields dropped."""
    if isinstance(value, dict) and "properties" in schema:
        return {k: pruned(v, schema["properties"][k]) for k, v in value.items() if k in schema["properties"]}
    if isinstance(value, list) and "items" in schema:
        return [pruned(v, schema["items"]) for v in value]
    return value


class RecordingApi:
    """The two calls a verdict makes: the status patch and, for a refusal, the Event."""

    def __init__(self) -> None:
        self.statuses: dict[str, Mapping[str, Any]] = {}

    def patch_status(self, resource: Any, namespace: str, name: str, status: Mapping[str, Any],
                     timeout: Any) -> dict[str, Any]:
        self.statuses[resource.kind] = pruned(dict(status), STATUS_SCHEMAS[resource.kind])
        return {}

    def create(self, resource: Any, obj: Mapping[str, Any], timeout: Any) -> dict[str, Any]:
        return dict(obj)


def feed_with(api: RecordingApi, *objects: dict[str, Any]) -> PolicyObjectFeed:
    feed = PolicyObjectFeed(api, LiveSettings(policy_object_groups=("kyverno.io", "policies.kyverno.io")),  # type: ignore[arg-type]
                            lambda api_version, kind: kind in STATUS_SCHEMAS)
    for obj in objects:
        resource = next(r for r in feed.resources if r.kind == obj["kind"])
        feed.caches[resource] = feed.caches[resource] or ObjectCache(resource.namespaced)
        feed.caches[resource].put(obj)
    return feed


def policy(kind: str, api_version: str, name: str) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "uid": name, "generation": 1},
            "spec": {}}


def test_a_loaded_validating_policy_shows_ready_where_its_crd_keeps_it() -> None:
    api = RecordingApi()
    feed = feed_with(api, policy("ValidatingPolicy", "policies.kyverno.io/v1", "vpol"),
                     policy("ClusterPolicy", "kyverno.io/v1", "cpol"))
    feed.refused(feed.documents(), {})
    status = api.statuses["ValidatingPolicy"]["conditionStatus"]
    assert status["ready"] is True
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [("Ready", "True")]
    # ClusterPolicy keeps its conditions at the top level, as before
    assert [(c["type"], c["status"]) for c in api.statuses["ClusterPolicy"]["conditions"]] == [("Ready", "True")]


def test_a_refused_validating_policy_shows_not_ready_with_the_reason() -> None:
    api = RecordingApi()
    vpol = policy("ValidatingPolicy", "policies.kyverno.io/v1", "broken")
    feed = feed_with(api, vpol)
    file = "ValidatingPolicy/broken (cluster object)"
    feed.refused(feed.documents(), {file: [PolicyLoadError(file, 0, None, "spec.validations", "no validations")]})
    status = api.statuses["ValidatingPolicy"]["conditionStatus"]
    assert status["ready"] is False
    assert status["conditions"][0]["reason"] == "Refused"
    assert "spec.validations" in status["conditions"][0]["message"]



def test_every_kyverno_cel_policy_kind_applied_as_an_object_is_watched_and_granted() -> None:
    """A GeneratingPolicy or a tenant's NamespacedValidatingPolicy applied with kubectl was never read: only
    ValidatingPolicy and MutatingPolicy were watched, so such a policy silently did nothing (chainsaw's
    generating-policies and namespaced-* folders). Each kind the CEL family compiles is watched, and the chart's
    ClusterRole lets the webhook read it and mark its status."""
    from tests.chart.support import render
    from webhook.families.cel.family import KYVERNO_KINDS

    feed = PolicyObjectFeed(RecordingApi(), LiveSettings(policy_object_groups=("policies.kyverno.io",)),  # type: ignore[arg-type]
                            lambda api_version, kind: True)
    watched = {r.kind: r for r in feed.resources}
    # PolicyException too (Kyverno's chainsaw validating-policies/exceptions: its objects were never read, so a
    # CEL policy's `exceptions.allowedImages` stayed empty); its objects are named apart from kyverno.io's
    assert set(KYVERNO_KINDS) <= set(watched)
    exception = watched["PolicyException"]
    assert exception.group == "policies.kyverno.io" and exception.namespaced
    obj = {"metadata": {"namespace": "team-a", "name": "x"}}
    assert object_file(exception, obj) != object_file(ResourceType("PolicyException", "kyverno.io", "v2",
                                                                   "policyexceptions", True), obj)
    rules = render({"live": {"policyObjectGroups": ["policies.kyverno.io"]}}).one("ClusterRole", "qm-quartermaster")["rules"]
    granted = {(resource, verb) for rule in rules if rule["apiGroups"] == ["policies.kyverno.io"]
               for resource in rule["resources"] for verb in rule["verbs"]}
    for resource in watched.values():
        assert {(resource.plural, "list"), (resource.plural, "watch"), (f"{resource.plural}/status", "patch")} <= granted


# Kyverno v1.19.1's own expectation (test/conformance/chainsaw/autogen/only-deployment): the policy, and the
# status.autogen Kyverno writes for it
ONLY_DEPLOYMENT = {
    "apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
    "metadata": {"name": "only-deployment", "uid": "u1", "generation": 1,
                 "annotations": {"pod-policies.kyverno.io/autogen-controllers": "Deployment"}},
    "spec": {"rules": [{"name": "require-image-tag", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                        "validate": {"failureAction": "Audit", "message": "An image tag is required.",
                                     "pattern": {"spec": {"containers": [{"image": "*:*"}]}}}}]},
}
KYVERNO_AUTOGEN = {"rules": [{  # and `match.resources: {}`, which Kyverno's Go types always write
    "match": {"any": [{"resources": {"kinds": ["apps/v1/Deployment"]}}], "resources": {}},
    "name": "autogen-require-image-tag",
    "validate": {"failureAction": "Audit", "message": "An image tag is required.",
                 "pattern": {"spec": {"template": {"spec": {"containers": [{"image": "*:*"}]}}}}}}]}


def _loaded(api: RecordingApi, tmp_path: Any, *objects: dict[str, Any]) -> None:
    """The objects loaded as live mode loads them: the real loader, the policy source, the feed's word."""
    from webhook.app import build_registry
    from webhook.cel import CelCompiler
    from webhook.policy.loader import PolicyLoader
    from webhook.policy.snapshot import PolicyStore
    from webhook.policy.source import DirectoryPolicySource
    from webhook.state.ledger import ReservationLedgers

    (tmp_path / "policies").mkdir(exist_ok=True)
    loader = PolicyLoader(build_registry(ReservationLedgers()), CelCompiler())
    source = DirectoryPolicySource(tmp_path / "policies", loader, PolicyStore(), objects=feed_with(api, *objects))
    assert source.reload().ok


def test_a_cluster_policy_shows_the_rules_autogen_made_as_kyverno_does(tmp_path: Any) -> None:
    api = RecordingApi()
    _loaded(api, tmp_path, ONLY_DEPLOYMENT)
    status = api.statuses["ClusterPolicy"]
    assert status["autogen"] == KYVERNO_AUTOGEN
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [("Ready", "True")]


def test_a_policy_without_autogen_shows_an_empty_autogen_and_clears_rules_shown_before(tmp_path: Any) -> None:
    api = RecordingApi()
    none = {**ONLY_DEPLOYMENT, "metadata": {**ONLY_DEPLOYMENT["metadata"],
                                            "annotations": {"pod-policies.kyverno.io/autogen-controllers": "none"}}}
    _loaded(api, tmp_path, none)
    # merged into a status that showed rules before, it leaves `autogen: {}`, as Kyverno shows none
    assert api.statuses["ClusterPolicy"]["autogen"] == {"rules": None}
    assert merge_patch({"autogen": KYVERNO_AUTOGEN}, api.statuses["ClusterPolicy"])["autogen"] == {}
    assert merge_patch({}, api.statuses["ClusterPolicy"])["autogen"] == {}


class RefusingAutogenApi(RecordingApi):
    """An API server whose CRD refuses the status's autogen part (a test double: Kyverno's CRDs, where a missing
    `targets` was refused so, are not installed in the test control plane of `.ci/run`)."""

    def patch_status(self, resource: Any, namespace: str, name: str, status: Mapping[str, Any],
                     timeout: Any) -> dict[str, Any]:
        from kubernetes.client.exceptions import ApiException

        if "autogen" in status:
            raise ApiException(status=422, reason="Invalid")
        return super().patch_status(resource, namespace, name, status, timeout)


def test_a_status_the_crd_refuses_still_writes_the_ready_condition() -> None:
    """The whole status patch was refused with what it showed besides Ready, so Ready never appeared and every
    readiness wait of Kyverno's chainsaw tests failed."""
    api = RefusingAutogenApi()
    feed = feed_with(api, policy("ValidatingPolicy", "policies.kyverno.io/v1", "vpol"))
    feed.refused(feed.documents(), {}, {"ValidatingPolicy/vpol (cluster object)": {"autogen": {"configs": None}}})
    assert api.statuses["ValidatingPolicy"]["conditionStatus"]["ready"] is True
