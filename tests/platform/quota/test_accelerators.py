"""Every accelerator of the platform counts by default: AMD's device plugin (amd.com/gpu, which
Kubeflow's notebook UI offers) and AMD's DRA class (gpu.amd.com) as NVIDIA's; an extended resource
that looks like an accelerator but is counted nowhere is refused in Enforce unless the policy lists it."""

import yaml

from tests.platform.quota.builders import build, claim, device_request, pod, request
from tests.support import REPO, assert_valid_k8s, load_yaml


async def admit(qm, obj):
    assert_valid_k8s(obj)
    return await qm.engine.validate(request(obj))


def repo_policy(**gpus) -> str:
    doc = load_yaml(REPO / "policies" / "profile-quota.yaml")[0]
    doc["spec"]["gpus"].update(gpus)
    return yaml.safe_dump(doc)


async def test_amd_gpus_count_against_the_quota(tmp_path):
    qm = build(tmp_path, repo_policy())
    verdict = await admit(qm, pod("rocm", gpus=2, resource="amd.com/gpu"))
    assert not verdict.allowed and "limit 1 GPU (class personal)" in verdict.message
    assert (await admit(qm, pod("rocm", gpus=1, resource="amd.com/gpu"))).allowed
    assert not (await admit(qm, pod("cuda", gpus=1))).allowed  # one GPU is one GPU, whichever vendor


async def test_amd_dra_claims_count(tmp_path):
    qm = build(tmp_path, repo_policy())
    verdict = await admit(qm, claim("mi300x", "jdoe", device_request(2, device_class="gpu.amd.com")))
    assert not verdict.allowed and "GPU quota exceeded" in verdict.message


async def test_an_uncounted_accelerator_is_refused_with_what_to_list(tmp_path):
    qm = build(tmp_path, repo_policy())
    verdict = await admit(qm, pod("shared", gpus=1, resource="nvidia.com/gpu.shared"))
    assert not verdict.allowed and verdict.code == 403
    assert "nvidia.com/gpu.shared looks like an accelerator that the profile quota does not count" in verdict.message
    assert "spec.gpus" in verdict.message
    verdict = await admit(qm, pod("gaudi", gpus=1, resource="habana.ai/gaudi"))
    assert not verdict.allowed and "habana.ai/gaudi" in verdict.message


async def test_listed_names_pass(tmp_path):
    qm = build(tmp_path, repo_policy(unknownAccelerators={"allowed": ["habana.ai/gaudi"]},
                                     legacyResources=[{"name": "nvidia.com/gpu", "weight": 1},
                                                      {"name": "nvidia.com/gpu.shared", "weight": 0.25}]))
    assert (await admit(qm, pod("gaudi", gpus=1, resource="habana.ai/gaudi"))).allowed
    assert (await admit(qm, pod("quarter", gpus=2, resource="nvidia.com/gpu.shared"))).allowed  # 0.5 GPU
    assert (await admit(qm, pod("nic", gpus=1, resource="rdma/hca_shared_devices_a"))).allowed  # not accelerator-like


async def test_audit_mode_only_warns(tmp_path):
    doc = yaml.safe_load(repo_policy())
    doc["spec"]["mode"] = "Audit"
    qm = build(tmp_path, yaml.safe_dump(doc))
    verdict = await admit(qm, pod("gaudi", gpus=1, resource="habana.ai/gaudi"))
    assert verdict.allowed and any("habana.ai/gaudi" in w for w in verdict.warnings)


async def test_gaudi_counts_once_the_policy_lists_it(tmp_path):
    """Kubeflow 1.10's notebook UI also offers Intel Gaudi (habana.ai/gaudi): refused as an unknown accelerator
    until the policy lists it, then counted at its weight like any GPU (docs/quota.md)."""
    from tests.platform.quota.builders import DEFAULT_POLICY, policy_text
    gaudi = pod("gaudi", gpus=1, resource="habana.ai/gaudi")
    unlisted = build(tmp_path / "unlisted")
    refused = await unlisted.engine.validate(request(gaudi))
    assert not refused.allowed and "habana.ai/gaudi" in refused.message and "legacyResources" in refused.message
    legacy = load_yaml(DEFAULT_POLICY)[0]["spec"]["gpus"]["legacyResources"]
    listed = build(tmp_path / "listed", policy_text(gpus={**load_yaml(DEFAULT_POLICY)[0]["spec"]["gpus"],
                                                          "legacyResources": [*legacy, {"name": "habana.ai/gaudi",
                                                                                        "weight": 1}]}))
    assert (await listed.engine.validate(request(gaudi))).allowed
    second = await listed.engine.validate(request(pod("more-gaudi", gpus=1, resource="habana.ai/gaudi")))
    assert not second.allowed and "in use 1 (Pod gaudi: 1)" in second.message
    nvidia = await listed.engine.validate(request(pod("nb", gpus=1)))
    assert not nvidia.allowed  # one GPU in the personal profile, whichever vendor's
