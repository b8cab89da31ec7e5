"""Issue 39, finding 7, and issue 42, point 2: every DeviceClass of a known GPU driver counts by default
(NVIDIA's DRA driver ships vfio.gpu.nvidia.com besides gpu.nvidia.com and mig.nvidia.com), a GPU-like class
the policy does not count is refused in Enforce, and KEP-5004's `deviceclass.resource.kubernetes.io/<class>`
extended resource counts at its class's weight (the scheduler serves it for every DeviceClass)."""

import pytest

from tests.platform.quota.builders import build, claim, device_request, pod, policy_text, request, template
from tests.support import assert_valid_k8s

CLASS_RESOURCE = "deviceclass.resource.kubernetes.io/"


async def admit(qm, obj, **kw):
    assert_valid_k8s(obj)
    return await qm.engine.validate(request(obj, **kw))


async def test_vfio_gpus_count_against_the_quota(tmp_path):
    qm = build(tmp_path)
    verdict = await admit(qm, claim("vm-gpus", "jdoe", device_request(2, device_class="vfio.gpu.nvidia.com")))
    assert not verdict.allowed and "GPU quota exceeded" in verdict.message
    assert (await admit(qm, claim("vm-gpu", "jdoe", device_request(1, device_class="vfio.gpu.nvidia.com")))).allowed
    assert not (await admit(qm, pod("cuda", gpus=1))).allowed  # the VM's GPU fills the profile


@pytest.mark.parametrize("make", [
    lambda cls: claim("c", "jdoe", device_request(4, device_class=cls)),
    lambda cls: template("t", "jdoe", device_request(4, device_class=cls)),
], ids=["claim", "template"])
@pytest.mark.parametrize("device_class", ["gpu.intel.com", "vfio.example.com", "mig.example.com"])
async def test_an_uncounted_gpu_like_class_is_refused(tmp_path, make, device_class):
    qm = build(tmp_path)
    verdict = await admit(qm, make(device_class))
    assert not verdict.allowed and verdict.code == 403
    assert f"device class {device_class} looks like an accelerator" in verdict.message
    assert "spec.gpus.deviceClasses" in verdict.message


async def test_classes_that_are_no_gpus_pass(tmp_path):
    qm = build(tmp_path)
    for device_class in ("compute-domain-default-channel.nvidia.com", "nic.example.com"):
        assert (await admit(qm, claim("c", "jdoe", device_request(4, device_class=device_class)))).allowed
    allowed = build(tmp_path / "allowed", policy_text(gpus={"unknownAccelerators": {"allowed": ["gpu.intel.com"]}}))
    assert (await admit(allowed, claim("c", "jdoe", device_request(4, device_class="gpu.intel.com")))).allowed


async def test_audit_mode_admits_an_uncounted_class_with_a_warning(tmp_path):
    qm = build(tmp_path, policy_text(mode="Audit"))
    verdict = await admit(qm, claim("c", "jdoe", device_request(4, device_class="gpu.intel.com")))
    assert verdict.allowed and any("gpu.intel.com" in w for w in verdict.warnings)


@pytest.mark.parametrize("device_class", ["mig.nvidia.com", "gpu.nvidia.com", "gpu.amd.com", "vfio.gpu.nvidia.com"])
async def test_the_kep_5004_name_of_a_counted_class_is_counted(tmp_path, device_class):
    """A pod with deviceclass.resource.kubernetes.io/mig.nvidia.com: 3 used to be admitted in a 1-GPU profile,
    charged nothing (and the same form for gpu.nvidia.com refused as an unknown accelerator)."""
    qm = build(tmp_path)
    over = await admit(qm, pod("many", gpus=3, resource=CLASS_RESOURCE + device_class))
    assert not over.allowed and "GPU quota exceeded" in over.message and "asks for 3 more" in over.message
    assert (await admit(qm, pod("one", gpus=1, resource=CLASS_RESOURCE + device_class))).allowed
    assert not (await admit(qm, pod("cuda", gpus=1))).allowed


@pytest.mark.parametrize("device_class", ["mig.example.com", "vfio.example.com", "gpu.intel.com"])
async def test_the_kep_5004_name_of_an_uncounted_gpu_class_is_refused(tmp_path, device_class):
    qm = build(tmp_path)
    verdict = await admit(qm, pod("p", gpus=1, resource=CLASS_RESOURCE + device_class))
    assert not verdict.allowed
    assert f"{CLASS_RESOURCE}{device_class} looks like an accelerator" in verdict.message


async def test_a_weighted_class_weighs_its_kep_5004_name_too(tmp_path):
    qm = build(tmp_path, policy_text(gpus={"deviceClasses": [{"name": "mig.nvidia.com", "weight": "0.25"}]}))
    assert (await admit(qm, pod("slices", gpus=4, resource=CLASS_RESOURCE + "mig.nvidia.com"))).allowed
    assert not (await admit(qm, pod("more", gpus=1, resource=CLASS_RESOURCE + "mig.nvidia.com"))).allowed
