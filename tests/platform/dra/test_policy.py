"""DeviceClaimRewrite documents: the default policy compiles to what the docs say; bad YAML is refused
with file, line and field."""

from __future__ import annotations

from fractions import Fraction

import pytest

from tests.platform.support import load, only_error
from tests.support import REPO
from webhook.cel import CelCompiler
from webhook.model.policy import Phase
from webhook.model.results import Action
from webhook.platform import platform_kinds
from webhook.platform.dra.config import InitClaims, RewriteStrategy
from webhook.app import build_registry
from webhook.policy.loader import PolicyLoader

MINIMAL = """\
apiVersion: quartermaster.dev/v1alpha1
kind: DeviceClaimRewrite
metadata:
  name: dra
spec:
  devices:
    - resourceName: nvidia.com/gpu
      deviceClassName: gpu.nvidia.com
"""


def test_registered_with_the_platform_kinds():
    assert any(k.kind == "DeviceClaimRewrite" and k.api_version == "quartermaster.dev/v1alpha1" for k in platform_kinds())


def test_default_policy_compiles_to_the_documented_settings():
    result = PolicyLoader(build_registry(), CelCompiler()).load(REPO / "policies" / "device-claim-rewrite.yaml")
    assert result.ok, result.errors
    (policy,) = result.policies
    assert policy.phases == {Phase.MUTATE} and policy.action is Action.ENFORCE
    assert policy.match.kinds == {"Pod"} and policy.match.operations == {"CREATE"}
    assert policy.match.namespace_selector.matches({"app.kubernetes.io/part-of": "kubeflow-profile"})
    assert not policy.match.namespace_selector.matches({"kubernetes.io/metadata.name": "default"})
    config = policy.config
    assert config.strategy is RewriteStrategy.CLAIMS and config.init_claims is InitClaims.REUSE
    gpu, profile = config.mapping_for("nvidia.com/gpu")
    assert (gpu.device_class, profile, gpu.user_choices) == ("gpu.nvidia.com", "", True)
    mig, profile = config.mapping_for("nvidia.com/mig-1g.10gb.me")
    assert (mig.device_class, profile) == ("mig.nvidia.com", "1g.10gb+me")
    assert mig.selectors_for(profile) == ("device.attributes['gpu.nvidia.com'].profile == '1g.10gb+me'",)
    assert config.mapping_for("nvidia.com/gpu-fake") is None and config.mapping_for("amd.com/gpu") is None
    assert [m.name for m in config.choices.models] == ["t4", "v100-16gb", "v100-32gb", "a100-40gb", "a100-80gb",
                                                       "h100-pcie", "h100-sxm"]
    assert config.choices.memory_maximum == Fraction(80 * 2**30)
    assert config.templates.labels == {"app.kubernetes.io/managed-by": "quartermaster"}


def test_minimal_policy_gets_defaults(tmp_path):
    result = load(tmp_path, MINIMAL)
    assert result.ok
    config = result.policies[0].config
    assert config.claim_prefix == "gpu" and config.templates.name_prefix == "quartermaster-gpu"
    assert config.templates.labels == {"app.kubernetes.io/managed-by": "quartermaster"}
    assert config.choices.model_annotation == "quartermaster.dev/gpu-model" and config.choices.models == ()
    assert config.devices[0].request_name == "gpu"


def test_prefix_mapping_default_request_name(tmp_path):
    text = MINIMAL.replace("resourceName: nvidia.com/gpu", "resourcePrefix: nvidia.com/mig-")
    config = load(tmp_path, text).policies[0].config
    mapping, profile = config.mapping_for("nvidia.com/mig-2g.20gb")
    assert mapping.request_for(profile) == "mig-2g-20gb"


@pytest.mark.parametrize("change, field, words", [
    (("deviceClassName: gpu.nvidia.com", "deviceClassName: gpu.nvidia.com\n      count: 2"),
     "spec.devices[0].count", "unknown field 'count'"),
    (("deviceClassName: gpu.nvidia.com", "deviceClassName: GPU_Class"), "spec.devices[0].deviceClassName", "does not match"),
    (("deviceClassName: gpu.nvidia.com", "deviceClassName: gpu.nvidia.com\n      selectors: ['device.driver ==']"),
     "spec.devices[0].selectors[0]", "does not compile"),
    (("deviceClassName: gpu.nvidia.com", "deviceClassName: gpu.nvidia.com\n      resourcePrefix: nvidia.com/mig-"),
     "spec.devices[0]", "exactly one of resourceName"),
    (("deviceClassName: gpu.nvidia.com",
      "deviceClassName: gpu.nvidia.com\n      selectors: [\"device.attributes['x'].p == '${profile}'\"]"),
     "spec.devices[0].selectors[0]", "only known for a resourcePrefix"),
    (("deviceClassName: gpu.nvidia.com", "deviceClassName: gpu.nvidia.com\n      profileSuffixes: {'.me': '+me'}"),
     "spec.devices[0].profileSuffixes", "only allowed with resourcePrefix"),
    (("deviceClassName: gpu.nvidia.com",
      "deviceClassName: gpu.nvidia.com\n      sharing:\n        strategy: MPS\n        timeSlicingConfig: {interval: Long}"),
     "spec.devices[0].sharing.timeSlicingConfig", "only allowed with strategy TimeSlicing"),
    (("deviceClassName: gpu.nvidia.com",
      "deviceClassName: gpu.nvidia.com\n      sharing:\n        strategy: MPS\n        mpsConfig: {defaultPinnedDeviceMemoryLimit: lots}"),
     "spec.devices[0].sharing.mpsConfig.defaultPinnedDeviceMemoryLimit", "not a Kubernetes quantity"),
    (("deviceClassName: gpu.nvidia.com", "deviceClassName: gpu.nvidia.com\n      driverConfig: {kind: GpuConfig}"),
     "spec.devices[0].driverConfig", "only used together with sharing"),
    (("spec:\n", "spec:\n  strategy: Rewrite\n"), "spec.strategy", "is not one of"),
    (("spec:\n", "spec:\n  templates:\n    labels: {app.kubernetes.io/managed-by: helm}\n"),
     "spec.templates.labels.app.kubernetes.io/managed-by", "must be 'quartermaster'"),
    (("spec:\n", "spec:\n  claimNamePrefix: GPU\n"), "spec.claimNamePrefix", "does not match"),
])
def test_bad_documents_are_refused_with_the_field(tmp_path, change, field, words):
    error = only_error(tmp_path, MINIMAL.replace(*change, 1))
    assert error.field == field and words in error.message, error
    assert error.file == "policy.yaml" and error.line is not None


def test_duplicate_mapping_is_refused(tmp_path):
    text = MINIMAL + "    - resourceName: nvidia.com/gpu\n      deviceClassName: other.example.com\n"
    error = only_error(tmp_path, text)
    assert error.field == "spec.devices[1]" and "already mapped by spec.devices[0]" in error.message
    assert error.line == 9


CHOICES = MINIMAL + """\
      userChoices: true
  userChoices:
    minimumMemory:
      selector: "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('${memory}')) >= 0"
      maximum: 80Gi
"""


def test_user_choices_compile(tmp_path):
    result = load(tmp_path, CHOICES)
    assert result.ok, result.errors
    choices = result.policies[0].config.choices
    assert choices.memory_annotation == "quartermaster.dev/gpu-memory" and choices.memory_maximum == Fraction(80 * 2**30)


@pytest.mark.parametrize("change, field, words", [
    (("quantity('${memory}')", "quantity('40Gi')"), "spec.userChoices.minimumMemory.selector", "must use ${memory}"),
    (("maximum: 80Gi", "maximum: eighty"), "spec.userChoices.minimumMemory.maximum", "not a Kubernetes quantity"),
    (("maximum: 80Gi", "maximum: '0'"), "spec.userChoices.minimumMemory.maximum", "more than zero"),
    (("      userChoices: true\n", ""), "spec.userChoices", "no entry of spec.devices accepts them"),
])
def test_bad_user_choices_are_refused(tmp_path, change, field, words):
    error = only_error(tmp_path, CHOICES.replace(*change))
    assert error.field == field and words in error.message, error


def test_model_names_must_be_unique(tmp_path):
    text = CHOICES + """\
    model:
      options:
        - {name: a100, selectors: ["device.attributes['gpu.nvidia.com'].productName == 'A100'"]}
        - {name: A100, selectors: ["device.attributes['gpu.nvidia.com'].productName == 'A100 80GB'"]}
"""
    error = only_error(tmp_path, text)
    assert error.field == "spec.userChoices.model.options[1].name" and "listed twice" in error.message
