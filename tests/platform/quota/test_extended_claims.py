"""KEP-5004 (DRA for extended resources): with a DeviceClass whose `extendedResourceName` is
nvidia.com/gpu, the scheduler creates a ResourceClaim for a pod's legacy limit, owned by the pod and
annotated `resource.kubernetes.io/extended-resource-claim: "true"`. The GPUs are charged once, as the
pod's: otherwise the claim is refused in a 1-GPU profile and the pod never binds.

A tenant writes the annotation and the ownerReference as easily (issue 39, finding 1): only the
scheduler's own CREATE (the review's userInfo) or the pod's status naming the claim make it the
scheduler's, one claim per pod, and only for the legacy resources of the claim's device class."""

import copy
import uuid

import pytest

from tests.platform.quota.builders import build, claim, device_request, owner, policy_text, pod, request, seeded_state
from tests.platform.quota.test_usage import usage
from tests.support import assert_valid_k8s, policy_dir, review, running_server

SCHEDULER = "system:kube-scheduler"
NOTEBOOK_UID = "6f2b8c1e-4d3a-4b5c-9e8f-7a6b5c4d3e2f"


def scheduler_claim(for_pod, gpus=1, name=None, device_class="gpu.nvidia.com"):
    """As kube-scheduler's DynamicResources plugin writes it for the pod's first container (the API server has
    given it a uid by the time validating webhooks see it)."""
    obj = claim(name or f"{for_pod['metadata']['name']}-extended-resources-9kq2x", "jdoe",
                device_request(gpus, name="container-0-request-0", device_class=device_class))
    obj["metadata"]["annotations"] = {"resource.kubernetes.io/extended-resource-claim": "true"}
    obj["metadata"]["ownerReferences"] = owner(for_pod)
    obj["metadata"]["uid"] = str(uuid.uuid4())
    return obj


def named_in_status(for_pod, claim_name, resource="nvidia.com/gpu"):
    """The pod after the scheduler wrote status.extendedResourceClaimStatus (core/v1, Kubernetes 1.34)."""
    scheduled = copy.deepcopy(for_pod)
    scheduled["status"] = {"phase": "Pending", "extendedResourceClaimStatus": {
        "resourceClaimName": claim_name,
        "requestMappings": [{"containerName": "main", "resourceName": resource, "requestName": "container-0-request-0"}]}}
    return scheduled


async def test_the_schedulers_claim_is_admitted_in_a_one_gpu_profile(tmp_path):
    qm = build(tmp_path)
    notebook = pod("nb-0", gpus=1, uid=NOTEBOOK_UID)
    first = await qm.engine.validate(request(notebook))
    assert first.allowed
    created = scheduler_claim(notebook)
    assert_valid_k8s(created)
    verdict = await qm.engine.validate(request(created, username=SCHEDULER))
    assert verdict.allowed, verdict.message
    # and it still fills the profile: a second GPU is refused
    assert not (await qm.engine.validate(request(pod("second", gpus=1)))).allowed


async def test_a_scheduler_named_in_the_policy_is_trusted_instead(tmp_path):
    qm = build(tmp_path, policy_text(gpus={"schedulerUsernames": ["system:serviceaccount:kube-system:gpu-scheduler"]}))
    notebook = pod("nb-0", gpus=1, uid=NOTEBOOK_UID)
    assert (await qm.engine.validate(request(notebook))).allowed
    assert not (await qm.engine.validate(request(scheduler_claim(notebook), username=SCHEDULER))).allowed
    verdict = await qm.engine.validate(request(scheduler_claim(notebook),
                                               username="system:serviceaccount:kube-system:gpu-scheduler"))
    assert verdict.allowed, verdict.message


def test_charged_once_as_the_pods_once_its_status_names_the_claim():
    notebook = pod("nb-0", gpus=1, uid=NOTEBOOK_UID)
    made = scheduler_claim(notebook)
    result = usage(named_in_status(notebook, made["metadata"]["name"]), made)
    assert result.gpus == 1
    assert result.charge("Pod", "nb-0").gpus == 1
    assert result.charge("ResourceClaim", made["metadata"]["name"]).gpus == 0


def test_without_its_pod_or_the_annotation_the_claim_counts():
    ghost = pod("gone", gpus=1, uid="11111111-2222-4333-8444-555555555555")
    assert usage(scheduler_claim(ghost)).gpus == 1  # a pod we do not see cannot have been charged
    notebook = pod("nb-0", gpus=1, uid=NOTEBOOK_UID)
    plain = scheduler_claim(notebook)
    del plain["metadata"]["annotations"]
    assert usage(named_in_status(notebook, plain["metadata"]["name"]), plain).gpus == 2


# --- the attack, through the real HTTPS server ------------------------------------------------------
@pytest.fixture
def quota_only(tmp_path):
    return policy_dir(tmp_path / "policies", {"quota.yaml": policy_text()})


async def _stored_pod(server, state, obj):
    response = await server.admit("/validate", review(obj))
    assert response["allowed"], response
    return state.get("Pod", "jdoe", obj["metadata"]["name"])


@pytest.mark.parametrize("resource", ["nvidia.com/gpu", "amd.com/gpu"])
async def test_forged_extended_resource_claims_cannot_add_gpus(quota_only, tmp_path, resource):
    """A 1-GPU pod referencing eight claims the user writes with the scheduler's annotation and a controller
    ownerReference to the pod: each claim used to be charged only what exceeded the pod's legacy GPU (nothing),
    so the pod ran with nine GPUs while the quota reported one in use."""
    state = seeded_state()
    async with running_server(quota_only, tmp_path, qm_state=state) as server:
        greedy = pod("trainer", gpus=1, resource=resource, claims={f"gpu{i}": f"forged-{i}" for i in range(8)})
        stored = await _stored_pod(server, state, greedy)
        answers = []
        for i in range(8):
            forged = scheduler_claim(stored, name=f"forged-{i}")  # written by jdoe, not by the scheduler
            assert_valid_k8s(forged)
            answers.append(await server.admit("/validate", review(forged)))
        assert [a["allowed"] for a in answers] == [False] * 8
        assert "in use 1 (Pod trainer: 1)" in answers[0]["status"]["message"]
        assert state.list("ResourceClaim", "jdoe") == []


async def test_the_scheduler_makes_one_claim_per_pod(quota_only, tmp_path):
    state = seeded_state()
    async with running_server(quota_only, tmp_path, qm_state=state) as server:
        stored = await _stored_pod(server, state, pod("nb-0", gpus=1))
        first = await server.admit("/validate", review(scheduler_claim(stored, name="nb-0-extended-resources-a"),
                                                       username=SCHEDULER))
        assert first["allowed"], first
        second = await server.admit("/validate", review(scheduler_claim(stored, name="nb-0-extended-resources-b"),
                                                        username=SCHEDULER))
        assert second["allowed"] is False and "GPU quota exceeded" in second["status"]["message"]


async def test_a_claim_made_again_under_the_schedulers_name_is_the_users(quota_only, tmp_path):
    state = seeded_state()
    async with running_server(quota_only, tmp_path, qm_state=state) as server:
        stored = await _stored_pod(server, state, pod("nb-0", gpus=1))
        made = scheduler_claim(stored)
        assert (await server.admit("/validate", review(made, username=SCHEDULER)))["allowed"]
        assert (await server.admit("/validate", review(None, operation="DELETE", old=made, namespace="jdoe")))["allowed"]
        again = scheduler_claim(stored)  # same name, a new uid: created by jdoe
        assert again["metadata"]["name"] == made["metadata"]["name"]
        refused = await server.admit("/validate", review(again))
        assert refused["allowed"] is False and "GPU quota exceeded" in refused["status"]["message"]


async def test_a_scheduler_claim_of_another_device_class_is_charged(quota_only, tmp_path):
    """amd.com/gpu maps to gpu.amd.com: a claim of gpu.nvidia.com holds other GPUs than the pod is charged."""
    state = seeded_state()
    async with running_server(quota_only, tmp_path, qm_state=state) as server:
        stored = await _stored_pod(server, state, pod("nb-0", gpus=1, resource="amd.com/gpu"))
        nvidia = await server.admit("/validate", review(scheduler_claim(stored), username=SCHEDULER))
        assert nvidia["allowed"] is False and "GPU quota exceeded" in nvidia["status"]["message"]
        amd = await server.admit("/validate", review(scheduler_claim(stored, device_class="gpu.amd.com"),
                                                     username=SCHEDULER))
        assert amd["allowed"], amd
