"""Issue 39, finding 6: the standalone accounting freed too early and trusted names.

- A DELETE review dropped a claim that the delete-protection finalizer keeps allocated, and a pod still in its
  grace period: their GPUs were free for someone else while still in use.
- A pod could reference the DRA rewrite's predictable claim-template name before the template existed, and the
  rewrite of the next GPU pod wrote that template into the state without a quota check: the first pod got its
  GPU unchecked."""

import copy

from tests.platform.quota.builders import claim, device_request, pod, policy_text, seeded_state
from tests.support import REPO, apply_patch, assert_valid_k8s, decode_patch, policy_dir, review, running_server

PROTECTION = "resource.kubernetes.io/delete-protection"


def allocated_claim(name="held"):
    obj = claim(name, "jdoe", device_request(1))
    obj["metadata"]["finalizers"] = [PROTECTION]
    obj["status"] = {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "node-1", "device": "gpu-0"}]}}}
    return obj


def running_pod(name="nb", grace=None):
    obj = pod(name, gpus=1, uid="2b7c0f4e-8d1a-4c5b-9e3f-6a7b8c9d0e1f", phase="Running")
    obj["spec"]["nodeName"] = "node-1"
    if grace is not None:
        obj["spec"]["terminationGracePeriodSeconds"] = grace
    return obj


def delete_review(obj, grace=None):
    body = review(None, operation="DELETE", old=obj, namespace="jdoe")
    if grace is not None:
        body["request"]["options"]["gracePeriodSeconds"] = grace
    return body


async def _quota_server(tmp_path, *objects):
    state = seeded_state(*objects)
    policies = policy_dir(tmp_path / "policies", {"quota.yaml": policy_text()})
    return state, running_server(policies, tmp_path, qm_state=state)


async def test_a_deleted_claim_stays_charged_while_its_finalizer_keeps_it(tmp_path):
    held = allocated_claim()
    assert_valid_k8s(held)
    state, server_cm = await _quota_server(tmp_path, held)
    async with server_cm as server:
        assert (await server.admit("/validate", delete_review(held)))["allowed"]
        refused = await server.admit("/validate", review(pod("next", gpus=1)))
        assert refused["allowed"] is False and "ResourceClaim held: 1" in refused["status"]["message"]
        assert state.get("ResourceClaim", "jdoe", "held")["metadata"]["deletionTimestamp"]
        # the controller deallocates and takes its finalizer off: now the API server removes the claim
        released = copy.deepcopy(state.get("ResourceClaim", "jdoe", "held"))
        released["metadata"]["finalizers"] = []
        released.pop("status")
        assert (await server.admit("/validate", review(released, operation="UPDATE", old=held)))["allowed"]
        assert state.get("ResourceClaim", "jdoe", "held") is None
        assert (await server.admit("/validate", review(pod("next", gpus=1))))["allowed"]


async def test_a_pod_deleted_gracefully_stays_charged_until_it_is_gone(tmp_path):
    notebook = running_pod()
    state, server_cm = await _quota_server(tmp_path, notebook)
    async with server_cm as server:
        assert (await server.admit("/validate", delete_review(notebook)))["allowed"]
        refused = await server.admit("/validate", review(pod("next", gpus=1)))
        assert refused["allowed"] is False and "Pod nb: 1" in refused["status"]["message"]
        # the kubelet confirms the pod stopped: a DELETE with grace period 0
        assert (await server.admit("/validate", delete_review(notebook, grace=0)))["allowed"]
        assert state.get("Pod", "jdoe", "nb") is None
        assert (await server.admit("/validate", review(pod("next", gpus=1))))["allowed"]


async def test_an_unscheduled_or_zero_grace_pod_is_gone_at_once(tmp_path):
    pending = pod("pending", gpus=1)
    state, server_cm = await _quota_server(tmp_path, pending, running_pod("quick", grace=0))
    async with server_cm as server:
        await server.admit("/validate", delete_review(pending))
        await server.admit("/validate", delete_review(state.get("Pod", "jdoe", "quick")))
        assert state.get("Pod", "jdoe", "pending") is None and state.get("Pod", "jdoe", "quick") is None


async def test_a_tenant_cannot_mark_a_claim_deleted_to_free_it(tmp_path):
    held = allocated_claim()
    state, server_cm = await _quota_server(tmp_path, held)
    async with server_cm as server:
        forged = copy.deepcopy(held)
        forged["metadata"].update(finalizers=[], deletionTimestamp="2026-01-01T00:00:00Z", deletionGracePeriodSeconds=0)
        await server.admit("/validate", review(forged, operation="UPDATE", old=held))
        kept = state.get("ResourceClaim", "jdoe", "held")
        assert kept is not None and "deletionTimestamp" not in kept["metadata"]
        assert (await server.admit("/validate", review(pod("next", gpus=1))))["allowed"] is False


async def test_a_template_name_referenced_in_advance_is_not_handed_out(tmp_path):
    """jdoe's notebook holds the profile's one GPU. A pod without GPUs references the claim template that the DRA
    rewrite would make for one GPU; then a one-GPU pod is sent, whose rewrite creates that template. Before the
    fix, the first pod then held a GPU that no quota check had seen (and the profile two)."""
    state = seeded_state(running_pod("notebook"))
    async with running_server(REPO / "policies", tmp_path, qm_state=state) as server:
        # the name the rewrite gives a one-GPU template (named by content, the same in every namespace), learnt
        # from a dry run in a profile with room (in jdoe's, full, the dry run is refused as the real create is)
        probe = pod("probe", "alice", gpus=1)
        planned = apply_patch(probe, decode_patch(await server.admit("/mutate", review(probe, dry_run=True))))
        (entry,) = planned["spec"]["resourceClaims"]
        predicted = entry["resourceClaimTemplateName"]
        assert state.get("ResourceClaimTemplate", "jdoe", predicted) is None
        squatter = pod("squatter", templates={"gpu": predicted})
        assert_valid_k8s(squatter)
        assert (await server.admit("/mutate", review(squatter)))["allowed"]
        assert (await server.admit("/validate", review(squatter)))["allowed"]  # nothing to count yet: a warning
        greedy = pod("greedy", gpus=1)
        mutated = await server.admit("/mutate", review(greedy))
        assert mutated["allowed"]
        rewritten = apply_patch(greedy, decode_patch(mutated))
        assert_valid_k8s(rewritten)
        made = rewritten["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
        assert made != predicted and state.get("ResourceClaimTemplate", "jdoe", made) is not None
        assert state.get("ResourceClaimTemplate", "jdoe", predicted) is None  # the squatter's name stays unmade
        refused = await server.admit("/validate", review(rewritten))
        assert refused["allowed"] is False
        assert "in use 1 (Pod notebook: 1)" in refused["status"]["message"]  # the squatter holds nothing

