"""Profile quotas through the real API server with two Quartermaster replicas behind a round-robin: concurrent
creates in a one-GPU profile end with exactly one pod, whichever replica each request reached."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
from kubernetes.client import ApiException

from tests.cluster.kube import Kube, eventually
from tests.cluster.quartermaster import Installation
from tests.cluster.workloads import make_profile, pod

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
        with ThreadPoolExecutor(CONCURRENT) as pool:
            outcomes = list(pool.map(lambda i: _create_claim(admin, namespace, i), range(CONCURRENT)))
        assert sum(o.admitted for o in outcomes) == 1, f"round {round_number}: {[o.status for o in outcomes]}"
        assert len(admin.list("resource.k8s.io/v1", "ResourceClaim", namespace)) == 1
        admin.delete("v1", "Namespace", namespace)
