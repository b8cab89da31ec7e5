"""The default model catalogue covers CERN's fleet, matching the product names NVML reports (the DRA
driver's productName attribute), each name by exactly one model. Evaluated with the real CEL runtime."""

from __future__ import annotations

import pytest

from tests.support import REPO, load_yaml
from webhook.cel import CelCompiler

OPTIONS = load_yaml(REPO / "policies" / "device-claim-rewrite.yaml")[0]["spec"]["userChoices"]["model"]["options"]
# nvidia-smi --query-gpu=name on each card of the fleet
NVML_NAMES = {
    "Tesla T4": "t4",
    "Tesla V100-PCIE-16GB": "v100-16gb", "Tesla V100-SXM2-16GB": "v100-16gb",
    "Tesla V100-PCIE-32GB": "v100-32gb", "Tesla V100-SXM2-32GB": "v100-32gb", "Tesla V100S-PCIE-32GB": "v100-32gb",
    "NVIDIA A100-PCIE-40GB": "a100-40gb", "NVIDIA A100-SXM4-40GB": "a100-40gb",
    "NVIDIA A100 80GB PCIe": "a100-80gb", "NVIDIA A100-SXM4-80GB": "a100-80gb",
    "NVIDIA H100 PCIe": "h100-pcie", "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA H100 NVL": None, "NVIDIA L4": None,  # not in the fleet: no model matches
}


def compile_dra(cel: CelCompiler, expression: str):
    try:
        return cel.compile(expression, env="dra")  # the CEL API with environments
    except TypeError:
        return cel.compile(expression)


def matching(cel: CelCompiler, product: str) -> list[str]:
    device = {"driver": "gpu.nvidia.com", "attributes": {"gpu.nvidia.com": {"productName": product, "type": "gpu"}},
              "capacity": {"gpu.nvidia.com": {}}}
    return [o["name"] for o in OPTIONS
            if all(compile_dra(cel, s).evaluate({"device": device}) is True for s in o["selectors"])]


@pytest.mark.parametrize("product", sorted(NVML_NAMES))
def test_each_product_name_selects_its_model_only(product):
    expected = NVML_NAMES[product]
    assert matching(CelCompiler(), product) == ([expected] if expected else [])


def test_the_fleet_is_covered():
    assert {o["name"] for o in OPTIONS} == {m for m in NVML_NAMES.values() if m}


# the memory NVML reports per model (nvidia-smi --query-gpu=memory.total), the least where drivers differ
NVML_MEMORY_MIB = {"t4": 15360, "v100-16gb": 16384, "v100-32gb": 32768, "a100-40gb": 40536, "a100-80gb": 81920,
                   "h100-pcie": 81559, "h100-sxm": 81559}


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: o["name"])
def test_a_models_memory_is_at_most_what_every_card_of_it_reports(option):
    """A user who asks for a model's own memory gets a selector (capacity >= asked) that its cards satisfy: an
    A100 40GB reports 40536MiB with some drivers, so 40Gi would match none of them."""
    from webhook.model.quantity import parse_quantity
    assert parse_quantity(option["memory"]) <= NVML_MEMORY_MIB[option["name"]] * 2**20, option
    memory = load_yaml(REPO / "policies" / "device-claim-rewrite.yaml")[0]["spec"]["userChoices"]["minimumMemory"]
    selector = memory["selector"].replace("${memory}", option["memory"])
    device = {"driver": "gpu.nvidia.com", "attributes": {"gpu.nvidia.com": {"type": "gpu"}},
              "capacity": {"gpu.nvidia.com": {"memory": f"{NVML_MEMORY_MIB[option['name']]}Mi"}}}
    program = compile_dra(CelCompiler(), selector)
    assert program.evaluate({"device": device}) is True
