"""Policy objects applied with `kubectl apply`, through the real API server and its CRD: an object takes effect
beside the files, a broken one is refused as it is applied (the policy webhook, with the field and the reason), a
name the files define already is stored and refused at load (its status Ready=False and a Warning Event: files
win), and a fixed object loads. The replicas watch quartermaster.dev (the
chart's default `policyObjectGroups`)."""

from __future__ import annotations

from typing import Any, Iterator

import pytest
import yaml

from tests.cluster.kube import Kube, eventually
from tests.cluster.quartermaster import Installation
from tests.cluster.workloads import pod, unique

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("cluster")]

API = "quartermaster.dev/v1alpha1"
PROFILE_CLASS = "e2e-objects"  # only this test's namespaces carry it


def quota(name: str, gpus: Any) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "ProfileQuota", "metadata": {"name": name},
            "spec": {"namespaceSelector": {"matchLabels": {"quartermaster.dev/profile-class": PROFILE_CLASS}},
                     "classes": {PROFILE_CLASS: {"gpus": gpus, "storage": "2Ti"}}, "defaultClass": PROFILE_CLASS}}


@pytest.fixture
def applied(admin: Kube) -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for name in names:
        admin.delete(API, "ProfileQuota", name)


def apply(admin: Kube, obj: dict[str, Any]) -> None:
    admin.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(obj))


def condition(admin: Kube, name: str) -> dict[str, Any] | None:
    found = admin.get(API, "ProfileQuota", name) or {}
    conditions = (found.get("status") or {}).get("conditions") or []
    return conditions[0] if conditions else None


def refused(admin: Kube) -> set[str]:
    """The ProfileQuotas that Warning events say were refused (cluster-scoped objects: their events are in default)."""
    return {e["regarding"]["name"] for e in admin.list("events.k8s.io/v1", "Event", "default")
            if e.get("reason") == "PolicyRefused" and e.get("type") == "Warning"
            and e.get("regarding", {}).get("kind") == "ProfileQuota"}


def test_policy_objects_applied_with_kubectl_load_and_refusals_are_told(admin: Kube, quartermaster: Installation,
                                                                       applied: list[str]) -> None:
    # not a Kubeflow profile: the DRA rewrite leaves its pods' legacy GPUs alone, so a dry-run probe is charged
    # exactly as the real create (a rewritten pod's claim template is created only by a real create)
    namespace = unique("objects")
    admin.create({"apiVersion": "v1", "kind": "Namespace",
                  "metadata": {"name": namespace, "labels": {"quartermaster.dev/profile-class": PROFILE_CLASS}}})
    eventually(lambda: admin.get("v1", "ServiceAccount", "default", namespace), 30, message="the default SA")
    applied += ["e2e-no-gpus", "e2e-broken", "profile-quota"]
    served = quartermaster.policy_counts()
    apply(admin, quota("e2e-no-gpus", 0))
    # each replica serves it (the API server keeps its connections: probes alone may all reach one replica)
    eventually(lambda: all(now > before for now, before in zip(quartermaster.policy_counts(), served)), 60,
               interval=0.5, message="the applied ProfileQuota served by every replica")
    # both replicas load it: every create is refused, whichever replica answers
    eventually(lambda: condition(admin, "e2e-no-gpus") and condition(admin, "e2e-no-gpus")["status"] == "True",
               60, message="the object's Ready condition")

    def refused_by_object() -> bool:
        result = admin.kubectl_create(pod("gpu", namespace, limits={"nvidia.com/gpu": 1}), extra=("--dry-run=server",),
                                      check=False)
        return result.returncode != 0 and "e2e-no-gpus" in result.stderr
    eventually(refused_by_object, 60, interval=1, message="the applied ProfileQuota refusing a GPU pod")
    for _ in range(4):
        assert refused_by_object()
    assert admin.kubectl_create(pod("cpu", namespace), check=False).returncode == 0  # other pods still pass

    # the CRD lets any value through: the policy webhook checks it as it is applied, and kubectl says why
    result = admin.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(quota("e2e-broken", "one")), check=False)
    assert result.returncode != 0, result.stdout
    assert 'admission webhook "validate-policy.quartermaster.dev" denied the request: ProfileQuota/e2e-broken ' \
           "(cluster object) would not load: spec.classes." in result.stderr, result.stderr
    assert "'one'" in result.stderr and admin.get(API, "ProfileQuota", "e2e-broken") is None
    # what no object can tell alone is told on the object once the set loads: a name a file defines loses
    apply(admin, quota("profile-quota", 4))  # policies/profile-quota.yaml defines this name
    duplicate = eventually(lambda: condition(admin, "profile-quota"), 60, message="the duplicate's condition")
    assert duplicate["status"] == "False" and duplicate["reason"] == "Refused", duplicate
    assert "already defined in profile-quota.yaml" in duplicate["message"]
    eventually(lambda: "profile-quota" in refused(admin), 60, message="a PolicyRefused Warning event")

    apply(admin, quota("e2e-broken", 2))  # fixed: admitted, and it loads
    eventually(lambda: (condition(admin, "e2e-broken") or {}).get("status") == "True", 60,
               message="the fixed object loaded")
    # the files' policies and the objects all serve: the stricter object still refuses
    assert refused_by_object()
    admin.delete(API, "ProfileQuota", "e2e-no-gpus")
    applied.remove("e2e-no-gpus")
    eventually(lambda: admin.kubectl_create(pod("after", namespace, limits={"nvidia.com/gpu": 1}),
                                            check=False).returncode == 0, 60, interval=1,
               message="a deleted object stops refusing")
    admin.delete("v1", "Namespace", namespace)  # its GPU pod goes back to the pool
