"""The opaque config of NVIDIA's DRA driver is checked against the driver's types when the policy loads
(api/nvidia.com/resource/v1beta1 of NVIDIA/k8s-dra-driver-gpu): GpuConfig for full GPUs,
MigDeviceConfig (MPS only) for MIG devices; and MIG profile names follow the driver's spelling."""

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


@pytest.mark.parametrize("sharing, field, words", [
    ("sharing: {strategy: TimeSlicing}", "spec.devices[0].sharing.strategy", "shares only through MPS"),
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
