"""KEP-5004 (DRA for extended resources): with a DeviceClass whose `extendedResourceName` is
nvidia.com/gpu, the scheduler creates a ResourceClaim for a pod's legacy limit, owned by the pod and
annotated `resource.kubernetes.io/extended-resource-claim: "true"`. The GPUs are charged once, as the
pod's: otherwise the claim is refused in a 1-GPU profile and the pod never binds."""

from tests.platform.quota_builders import build, claim, device_request, owner, pod, request
from tests.platform.test_quota_usage import usage
from tests.support import assert_valid_k8s


def scheduler_claim(for_pod, gpus=1):
    """As kube-scheduler's DynamicResources plugin writes it for the pod's first container."""
    obj = claim(f"{for_pod['metadata']['name']}-extended-resources-9kq2x", "jdoe",
                device_request(gpus, name="container-0-request-0"))
    obj["metadata"]["annotations"] = {"resource.kubernetes.io/extended-resource-claim": "true"}
    obj["metadata"]["ownerReferences"] = owner(for_pod)
    return obj


async def test_the_schedulers_claim_is_admitted_in_a_one_gpu_profile(tmp_path):
    qm = build(tmp_path)
    notebook = pod("nb-0", gpus=1, uid="6f2b8c1e-4d3a-4b5c-9e8f-7a6b5c4d3e2f")
    first = await qm.engine.validate(request(notebook))
    assert first.allowed
    created = scheduler_claim(notebook)
    assert_valid_k8s(created)
    verdict = await qm.engine.validate(request(created))
    assert verdict.allowed, verdict.message
    # and it still fills the profile: a second GPU is refused
    assert not (await qm.engine.validate(request(pod("second", gpus=1)))).allowed


def test_charged_once_as_the_pods():
    notebook = pod("nb-0", gpus=1, uid="6f2b8c1e-4d3a-4b5c-9e8f-7a6b5c4d3e2f")
    result = usage(notebook, scheduler_claim(notebook))
    assert result.gpus == 1
    assert result.charge("Pod", "nb-0").gpus == 1
    assert result.charge("ResourceClaim", "nb-0-extended-resources-9kq2x").gpus == 0


def test_without_its_pod_or_the_annotation_the_claim_counts():
    ghost = pod("gone", gpus=1, uid="11111111-2222-4333-8444-555555555555")
    assert usage(scheduler_claim(ghost)).gpus == 1  # a pod we do not see cannot have been charged
    notebook = pod("nb-0", gpus=1, uid="6f2b8c1e-4d3a-4b5c-9e8f-7a6b5c4d3e2f")
    plain = scheduler_claim(notebook)
    del plain["metadata"]["annotations"]
    assert usage(notebook, plain).gpus == 2
