"""The batteries on the CEL engine: DRA selectors are type-checked at load, matchConditions use env admission."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.platform.support import load as load_file
from webhook.cel import CelCompiler

DRA = """\
apiVersion: quartermaster.dev/v1alpha1
kind: DeviceClaimRewrite
metadata:
  name: dra
spec:
  devices:
    - resourceName: nvidia.com/gpu
      deviceClassName: gpu.nvidia.com
      selectors: ["SELECTOR"]
"""


def load(tmp_path: Path, text: str):
    return load_file(tmp_path, text, CelCompiler("cel-expr-python"))  # optionals below


@pytest.mark.parametrize("selector,words", [
    ("device.attribute['gpu.nvidia.com'].productName == 'A100'", "device has no field 'attribute'"),
    ("device.attributes['gpu.nvidia.com'].profle == '1g.5gb'", "has no 'profle'"),
    ("device.capacity['gpu.nvidia.com'].memroy.compareTo(quantity('40Gi')) >= 0", "has no 'memroy'"),
    ("device.drivr == 'gpu.nvidia.com'", "device has no field 'drivr'"),
    ("object.metadata.name == 'x'", "undeclared reference to 'object"),
])
def test_selector_typos_are_load_errors_naming_the_field(tmp_path, selector, words):
    result = load(tmp_path, DRA.replace("SELECTOR", selector))
    assert not result.policies and len(result.errors) == 1, result
    error = result.errors[0]
    assert error.field == "spec.devices[0].selectors[0]" and words in error.message, error
    assert error.file == "policy.yaml" and error.line is not None


def test_valid_selectors_load(tmp_path):
    selector = ("device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA A100') && "
                "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0")
    result = load(tmp_path, DRA.replace("SELECTOR", selector))
    assert not result.errors and len(result.policies) == 1


def test_match_conditions_use_the_admission_environment(tmp_path):
    text = DRA.replace('      selectors: ["SELECTOR"]\n', "").replace(
        "spec:\n", "spec:\n  matchConditions:\n    - name: labelled\n      expression: \"object.?metadata.?labels.?gpu.orValue('') == 'yes'\"\n", 1)
    result = load(tmp_path, text)
    assert not result.errors, result.errors
    condition = result.policies[0].match.conditions[0]
    assert condition({"object": {"metadata": {"labels": {"gpu": "yes"}}}}) is True
    assert condition({"object": {"metadata": {}}}) is False
    broken = load(tmp_path, text.replace("object.?metadata", "device.?metadata"))
    assert broken.errors and "spec.matchConditions[0].expression" == broken.errors[0].field
