"""The opaque config of NVIDIA's DRA driver is checked against the driver's types when the policy loads
(api/nvidia.com/resource/v1beta1 of NVIDIA/k8s-dra-driver-gpu): GpuConfig for full GPUs,
MigDeviceConfig for MIG devices (TimeSlicing accepted there and inert, as the driver's MigDeviceSharing.Validate
has it); MPS limits as MpsPerDevicePinnedMemoryLimit.Normalize checks them; MIG profile names as the driver spells
them."""

from __future__ import annotations

import pytest

from tests.platform.support import load, only_error

MIG = """\
apiVersion: quartermaster.dev/v1alpha1
kind: DeviceClaimRewrite
metadata:
  name: dra
spec:
  devices:
    - resourcePrefix: nvidia.com/mig-
      deviceClassName: mig.nvidia.com
      SHARING
"""


def config_of(tmp_path, sharing: str):
    result = load(tmp_path, MIG.replace("SHARING", sharing))
    assert result.ok, result.errors
    return result.policies[0].config.devices[0].driver_config


def test_mig_devices_get_mig_device_config(tmp_path):
    config = config_of(tmp_path, "sharing: {strategy: MPS, mpsConfig: {defaultActiveThreadPercentage: 25}}")
    assert config.parameters() == {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "MigDeviceConfig",
                                   "sharing": {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 25}}}


def test_time_slicing_on_a_mig_device_is_accepted_as_the_driver_accepts_it(tmp_path):
    config = config_of(tmp_path, "sharing: {strategy: TimeSlicing}")
    assert config.parameters()["kind"] == "MigDeviceConfig"
    assert config.parameters()["sharing"] == {"strategy": "TimeSlicing"}


@pytest.mark.parametrize("limits", ["{defaultPinnedDeviceMemoryLimit: 1Mi}",
                                    "{defaultPerDevicePinnedMemoryLimit: {'0': 2Gi, '1': 1Gi}}",
                                    "{defaultPerDevicePinnedMemoryLimit: {GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c: 4Gi}}",
                                    "{defaultPerDevicePinnedMemoryLimit: {MIG-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d: 1024Mi}}"])
def test_mps_limits_the_driver_accepts_load(tmp_path, limits):
    assert config_of(tmp_path, f"sharing: {{strategy: MPS, mpsConfig: {limits}}}")


@pytest.mark.parametrize("limits, field, words", [
    # the driver passes MPS whole megabytes: value / 1024 / 1024 must stay above zero
    ("{defaultPinnedDeviceMemoryLimit: 1023Ki}", "mpsConfig.defaultPinnedDeviceMemoryLimit", "under 1Mi"),
    ("{defaultPerDevicePinnedMemoryLimit: {'0': 500Ki}}", "mpsConfig.defaultPerDevicePinnedMemoryLimit.0", "under 1Mi"),
    # keys are an index (strconv.Atoi) or a device UUID
    ("{defaultPerDevicePinnedMemoryLimit: {gpu0: 1Gi}}", "mpsConfig.defaultPerDevicePinnedMemoryLimit.gpu0",
     "names no device"),
    ("{defaultPerDevicePinnedMemoryLimit: {'-1': 1Gi}}", "mpsConfig.defaultPerDevicePinnedMemoryLimit.-1",
     "names no device"),
])
def test_mps_limits_the_driver_refuses_are_refused_at_load(tmp_path, limits, field, words):
    error = only_error(tmp_path, MIG.replace("SHARING", f"sharing: {{strategy: MPS, mpsConfig: {limits}}}"))
    assert error.field == f"spec.devices[0].sharing.{field}" and words in error.message, error


@pytest.mark.parametrize("sharing, field, words", [
    ("sharing: {strategy: MPS, timeSlicingConfig: {interval: Long}}", "spec.devices[0].sharing.timeSlicingConfig",
     "cannot be configured on a MIG device"),
    ("sharing: {strategy: MPS}\n      driverConfig: {kind: GpuConfig}", "spec.devices[0].driverConfig.kind",
     "GpuConfig does not apply to mig.nvidia.com devices"),
])
def test_mig_config_the_driver_would_refuse_is_refused_at_load(tmp_path, sharing, field, words):
    error = only_error(tmp_path, MIG.replace("SHARING", sharing))
    assert error.field == field and words in error.message, error


def test_a_full_gpu_cannot_take_mig_device_config(tmp_path):
    text = MIG.replace("resourcePrefix: nvidia.com/mig-", "resourceName: nvidia.com/gpu").replace(
        "mig.nvidia.com", "gpu.nvidia.com").replace("SHARING", "sharing: {strategy: MPS}\n      driverConfig: {kind: MigDeviceConfig}")
    error = only_error(tmp_path, text)
    assert error.field == "spec.devices[0].driverConfig.kind" and "use GpuConfig" in error.message


def test_another_drivers_config_is_passed_through(tmp_path):
    config = config_of(tmp_path, "sharing: {strategy: TimeSlicing}\n      driverConfig: {driver: gpu.example.com, "
                                 "apiVersion: example.com/v1, kind: SliceConfig}")
    assert config.kind == "SliceConfig" and config.driver == "gpu.example.com"


def test_suffixes_match_longest_first_whatever_the_yaml_order(tmp_path):
    text = MIG.replace("SHARING", "profileSuffixes: {'.me': '+me', '.gfx': '+gfx', '.me.all': '+me.all'}")
    mapping = load(tmp_path, text).policies[0].config.devices[0]
    assert mapping.profile_of("nvidia.com/mig-1g.10gb.me.all") == "1g.10gb+me.all"
    assert mapping.profile_of("nvidia.com/mig-1g.10gb.me") == "1g.10gb+me"
    assert mapping.profile_of("nvidia.com/mig-1g.10gb-me") == "1g.10gb-me"  # without media extensions: as it is
    assert mapping.profile_of("nvidia.com/mig-1g.24gb.gfx") == "1g.24gb+gfx"
