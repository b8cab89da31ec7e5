"""Profile quotas through the real API server with two Quartermaster replicas behind a round-robin: concurrent
creates in a one-GPU profile end with exactly one pod, whichever replica each request reached."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Iterator

import pytest
import yaml
from kubernetes.client import ApiException

from tests.cluster.kube import Kube, eventually
from tests.cluster.quartermaster import Installation
from tests.cluster.workloads import make_profile, pod, unique

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("cluster")]

CONCURRENT = 20
ROUNDS = 10


@dataclass(frozen=True)
class CreateOutcome:
    admitted: bool
    status: int
    message: str


def _create(admin: Kube, namespace: str, index: int) -> CreateOutcome:
    body = pod(f"gpu-{index}", namespace, limits={"nvidia.com/gpu": "1"})
    try:
        admin.core.create_namespaced_pod(namespace, body)
        return CreateOutcome(True, 201, "")
    except ApiException as error:
        return CreateOutcome(False, error.status, error.body or "")


def test_concurrent_gpu_pods_in_a_one_gpu_profile_admit_exactly_one(admin: Kube, quartermaster: Installation) -> None:
    assert len(quartermaster.replicas) == 2
    for round_number in range(ROUNDS):
        namespace = make_profile(admin, prefix="race")["metadata"]["name"]
        # the race, not the informers' lag: a replica that has not seen the namespace yet refuses with "try again"
        eventually(lambda: quartermaster.knows_namespace(namespace), 30, interval=0.2,
                   message=f"both replicas know {namespace}")
        with ThreadPoolExecutor(CONCURRENT) as pool:
            outcomes = list(pool.map(lambda i: _create(admin, namespace, i), range(CONCURRENT)))
        admitted = [o for o in outcomes if o.admitted]
        assert len(admitted) == 1, f"round {round_number}: {len(admitted)} of {CONCURRENT} admitted"
        denied = [o for o in outcomes if not o.admitted]
        assert all(o.status == 403 for o in denied), {o.status for o in denied}
        assert all("GPU" in o.message for o in denied), denied[0].message
        assert len(admin.list("v1", "Pod", namespace)) == 1
        admin.delete("v1", "Namespace", namespace)


def test_a_second_gpu_pod_is_refused_with_what_to_do(admin: Kube, quartermaster: Installation) -> None:
    namespace = make_profile(admin)["metadata"]["name"]
    admin.kubectl_create(pod("first", namespace, limits={"nvidia.com/gpu": 1}))
    admin.wait_pod(namespace, "first")
    refused = admin.kubectl_create(pod("second", namespace, limits={"nvidia.com/gpu": 1}), check=False)
    assert refused.returncode != 0
    assert 'admission webhook "validate.quartermaster.dev" denied the request' in refused.stderr, refused.stderr
    assert "first" in refused.stderr, "the denial names the pod that holds the GPU"
    # once the first pod is gone, the GPU is free again
    admin.kubectl("delete", "pod", "first", "-n", namespace, "--grace-period=0", "--force")
    eventually(lambda: admin.get("v1", "Pod", "first", namespace) is None, 60, message="first pod deleted")
    eventually(lambda: admin.kubectl_create(pod("second", namespace, limits={"nvidia.com/gpu": 1}),
                                            check=False).returncode == 0, 30,
               message="the second pod admitted once the first is gone")


def test_claims_forged_to_look_like_the_schedulers_are_charged_in_full(admin: Kube,
                                                                       quartermaster: Installation) -> None:
    """The KEP-5004 claim marker and a controller ownerReference to the user's own pod are the user's to write:
    through the real API server, only one of eight such claims fits a one-GPU profile."""
    namespace = make_profile(admin)["metadata"]["name"]
    greedy = pod("greedy", namespace)
    greedy["spec"]["resourceClaims"] = [{"name": f"c{i}", "resourceClaimName": f"forged-{i}"} for i in range(8)]
    greedy["spec"]["containers"][0]["resources"]["claims"] = [{"name": f"c{i}"} for i in range(8)]
    uid = admin.create(greedy)["metadata"]["uid"]
    created = []
    for i in range(8):
        claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": f"forged-{i}", "namespace": namespace,
                              "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
                              "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "greedy", "uid": uid,
                                                   "controller": True, "blockOwnerDeletion": True}]},
                 "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                                                               "count": 1}}]}}}
        result = admin.kubectl_create(claim, check=False)
        created.append(result.returncode == 0)
        if result.returncode != 0:
            assert "denied the request" in result.stderr and "GPU" in result.stderr, result.stderr
    assert created.count(True) == 1, created
    assert len(admin.list("resource.k8s.io/v1", "ResourceClaim", namespace)) == 1


def _create_claim(admin: Kube, namespace: str, index: int) -> CreateOutcome:
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": f"claim-{index}", "namespace": namespace},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                                                           "count": 1}}]}}}
    try:
        admin.resource("resource.k8s.io/v1", "ResourceClaim").create(body=claim, namespace=namespace)
        return CreateOutcome(True, 201, "")
    except ApiException as error:
        return CreateOutcome(False, error.status, error.body or "")


def test_concurrent_claims_created_directly_admit_exactly_one(admin: Kube, quartermaster: Installation) -> None:
    for round_number in range(3):
        namespace = make_profile(admin, prefix="claims")["metadata"]["name"]
        eventually(lambda: quartermaster.knows_namespace(namespace), 30, interval=0.2,
                   message=f"both replicas know {namespace}")
        with ThreadPoolExecutor(CONCURRENT) as pool:
            outcomes = list(pool.map(lambda i: _create_claim(admin, namespace, i), range(CONCURRENT)))
        assert sum(o.admitted for o in outcomes) == 1, f"round {round_number}: {[o.status for o in outcomes]}"
        assert len(admin.list("resource.k8s.io/v1", "ResourceClaim", namespace)) == 1
        admin.delete("v1", "Namespace", namespace)


PASSTHROUGH_LABEL = "quartermaster.dev/e2e-passthrough"


@pytest.fixture
def passthrough_namespace(admin: Kube, quartermaster: Installation) -> Iterator[str]:
    """A namespace that is no Kubeflow profile (the DRA rewrite leaves its pods alone, as with `strategy:
    Passthrough`) under a one-GPU ProfileQuota applied with kubectl: legacy GPU limits reach the scheduler, which
    allocates them through gpu.nvidia.com's extendedResourceName (KEP-5004) and creates the claim itself."""
    quota = {"apiVersion": "quartermaster.dev/v1alpha1", "kind": "ProfileQuota", "metadata": {"name": "e2e-passthrough"},
             "spec": {"namespaceSelector": {"matchLabels": {PASSTHROUGH_LABEL: "true"}},
                      "classes": {"passthrough": {"gpus": 1, "storage": "30Gi"}}, "defaultClass": "passthrough"}}
    served = quartermaster.policy_counts()
    admin.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(quota))
    # each replica serves it (the API server keeps its connections: probes alone may all reach one replica)
    eventually(lambda: all(now > before for now, before in zip(quartermaster.policy_counts(), served)), 60,
               interval=0.5, message="the applied ProfileQuota served by every replica")
    name = unique("passthrough")
    admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {PASSTHROUGH_LABEL: "true"}}})
    eventually(lambda: admin.get("v1", "ServiceAccount", "default", name), 30, message=f"{name}/default SA")

    def loaded() -> bool:  # every probe is refused by the object's policy
        probe = admin.kubectl_create(pod("probe", name, limits={"nvidia.com/gpu": 2}), extra=("--dry-run=server",),
                                     check=False)
        return probe.returncode != 0 and "e2e-passthrough" in probe.stderr
    eventually(lambda: all(loaded() for _ in range(4)), 60, interval=1, message="the applied ProfileQuota")
    eventually(lambda: quartermaster.knows_namespace(name), 30, interval=0.2, message=f"both replicas know {name}")
    yield name
    admin.delete("v1", "Namespace", name)
    admin.delete("quartermaster.dev/v1alpha1", "ProfileQuota", "e2e-passthrough")


def test_concurrent_extended_resource_pods_admit_one_whose_scheduler_made_claim_is_admitted(
        admin: Kube, quartermaster: Installation, passthrough_namespace: str) -> None:
    """Of 20 concurrent legacy GPU pods one is admitted; the claim the scheduler creates for it (KEP-5004) is
    admitted too, charged to the pod already, so the pod runs with a device allocated."""
    namespace = passthrough_namespace
    with ThreadPoolExecutor(CONCURRENT) as pool:
        outcomes = list(pool.map(lambda i: _create(admin, namespace, i), range(CONCURRENT)))
    admitted = [i for i, o in enumerate(outcomes) if o.admitted]
    assert len(admitted) == 1, [o.message for o in outcomes[:1]]
    odd = [o.message for o in outcomes if not o.admitted and "GPU" not in o.message]
    assert not odd, odd  # every other pod refused by the quota, and the reason says so
    stored = admin.wait_pod(namespace, f"gpu-{admitted[0]}", timeout=90)
    assert not stored["spec"].get("resourceClaims"), "the rewrite leaves pods outside profiles alone"
    claim_name = (stored["status"].get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
    assert claim_name, stored["status"]
    claim = admin.get("resource.k8s.io/v1", "ResourceClaim", claim_name, namespace)
    assert claim is not None and (claim.get("status") or {}).get("allocation"), claim
    assert len(admin.list("v1", "Pod", namespace)) == 1
