"""GPU counting of one pod (effective requests, legacy weights) and one claim (DRA requests)."""

from fractions import Fraction

import pytest

from tests.platform.quota.builders import (claim, claim_spec, compiled, container, device_request, first_available, pod,
                                           template)
from tests.support import assert_valid_k8s
from webhook.platform.quota.devices import claim_spec_gpus, effective_requests, legacy_gpus

RULES = compiled().settings.rules


@pytest.mark.parametrize("init, containers, expected", [
    # app containers add up
    ([], [container("a", 1), container("b", 2)], 3),
    # regular init containers run one at a time, before the app: the largest counts, if larger than the app
    ([container("i1", 4), container("i2", 2)], [container("a", 1)], 4),
    ([container("i1", 1)], [container("a", 2), container("b", 1)], 3),
    # a native sidecar keeps running: it adds to the app containers...
    ([container("side", 1, restart_always=True)], [container("a", 1)], 2),
    # ...and to every regular init container started after it, but not to those before it
    ([container("i0", 3), container("side", 1, restart_always=True), container("i1", 3)], [container("a", 1)], 4),
    ([container("side", 2, restart_always=True), container("side2", 1, restart_always=True)], [container("a", 0)], 3),
])
def test_effective_requests_follow_kubernetes(init, containers, expected):
    spec = pod("p", init=init, containers=containers)
    assert_valid_k8s(spec)
    assert legacy_gpus(spec["spec"], RULES.legacy) == expected


def test_requests_and_limits_count_once():
    spec = pod("p")
    spec["spec"]["containers"][0]["resources"] = {"requests": {"nvidia.com/gpu": "2"}, "limits": {"nvidia.com/gpu": "2"}}
    assert_valid_k8s(spec)
    assert legacy_gpus(spec["spec"], RULES.legacy) == 2


def test_mig_slices_count_as_one_gpu_unless_weighted():
    spec = pod("p", containers=[container("a", 2, resource="nvidia.com/mig-1g.10gb"), container("b", 1)])["spec"]
    assert effective_requests(spec, RULES.legacy) == {"nvidia.com/mig-1g.10gb": 2, "nvidia.com/gpu": 1}
    assert legacy_gpus(spec, RULES.legacy) == 3
    weighted = compiled(gpus={"legacyResources": [{"name": "nvidia.com/gpu"},
                                                  {"prefix": "nvidia.com/mig-", "weight": 1},
                                                  {"name": "nvidia.com/mig-1g.10gb", "weight": 0.125}]})
    assert legacy_gpus(spec, weighted.settings.rules.legacy) == Fraction(5, 4)


def test_other_extended_resources_are_not_gpus():
    spec = pod("p", containers=[container("a", 4, resource="example.com/fpga")])["spec"]
    assert legacy_gpus(spec, RULES.legacy) == 0


def test_claim_count_and_device_class():
    table = RULES.device_classes
    assert claim_spec_gpus(claim_spec(device_request(3)), table).gpus == 3
    assert claim_spec_gpus(claim_spec(device_request(2, "mig.nvidia.com", name="m"), device_request(1)), table).gpus == 3
    nic = claim_spec_gpus(claim_spec(device_request(4, "nic.example.com")), table)
    assert nic.gpus == 0 and not nic.unbounded


def test_first_available_counts_its_largest_alternative():
    spec = claim_spec(first_available(device_request(1), device_request(4, "mig.nvidia.com"), device_request(2)))
    assert_valid_k8s(claim("c", "jdoe", *spec["devices"]["requests"]))
    assert claim_spec_gpus(spec, RULES.device_classes).gpus == 4


def test_allocation_mode_all_is_unbounded():
    amount = claim_spec_gpus(claim_spec(device_request(mode="All")), RULES.device_classes)
    assert amount.unbounded
    assert claim_spec_gpus(claim_spec(first_available(device_request(1), device_request(mode="All"))),
                           RULES.device_classes).unbounded
    assert_valid_k8s(template("t", "jdoe", first_available(device_request(1), device_request(mode="All"))))


def test_v1beta1_claim_shape_is_understood():
    spec = {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": 2},
                                     {"name": "all", "deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}]}}
    amount = claim_spec_gpus(spec, RULES.device_classes)
    assert amount.gpus == 2 and amount.unbounded
