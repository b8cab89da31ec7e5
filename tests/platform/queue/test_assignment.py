"""QueueAssignment through the real engine: pods and Jobs of profiles get the profile's Kueue
LocalQueue by class, a user's queue is kept, overridden or refused as the policy says, a Job's pods
are left to the Job. Every patched object is valid for Kubernetes 1.34 and the patch applies."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import REPO, apply_patch, assert_valid_k8s, load_yaml
from webhook.app import Quartermaster, Settings
from webhook.engine.offline import admit_offline
from webhook.state.memory import InMemoryClusterState

POLICY = REPO / "examples" / "queue-assignment.yaml"  # opt-in: not in the default policies
QUEUE = "kueue.x-k8s.io/queue-name"


def pod(namespace: str, name: str = "train", labels: dict[str, str] | None = None, owner: dict | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    if owner:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {
        "restartPolicy": "Never",
        "containers": [{"name": "train", "image": "nvcr.io/nvidia/pytorch:25.01-py3", "command": ["python", "train.py"],
                        "resources": {"limits": {"cpu": "4", "memory": "16Gi"}}}]}}


def job(namespace: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "sweep", "namespace": namespace, "labels": dict(labels or {})},
            "spec": {"parallelism": 2, "completions": 4, "backoffLimit": 2, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "sweep", "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                                "resources": {"limits": {"cpu": "2", "memory": "8Gi"}}}]}}}}


def build(tmp_path: Path, **spec_changes: Any) -> Quartermaster:
    doc = load_yaml(POLICY)[0]
    doc["spec"].update(copy.deepcopy(spec_changes))
    (tmp_path / "queue.yaml").write_text(yaml.safe_dump(doc))
    state = InMemoryClusterState.from_directory(REPO / "examples" / "state")
    qm = Quartermaster.build(Settings(policies=tmp_path / "queue.yaml"), state=state)
    qm.load_policies()
    return qm


async def admit(qm: Quartermaster, resource: dict[str, Any]):
    result = await admit_offline(qm.engine, resource, dry_run=True)
    patched = apply_patch(resource, list(result.patch))
    if result.allowed:
        assert patched == result.object
        assert_valid_k8s(patched)
    return result, patched


async def test_a_personal_pod_goes_into_the_personal_queue(tmp_path):
    result, patched = await admit(build(tmp_path), pod("jdoe"))
    assert result.allowed
    assert patched["metadata"]["labels"][QUEUE] == "personal"
    assert [r.message for r in result.results if r.policy.name == "profile-queues"] == ["put into the personal queue personal"]


async def test_a_team_job_goes_into_the_team_queue_suspended(tmp_path):
    result, patched = await admit(build(tmp_path), job("ml-team"))
    assert patched["metadata"]["labels"][QUEUE] == "team"
    assert patched["spec"]["suspend"] is True  # Kueue unsuspends it once admitted


async def test_a_users_queue_is_kept_by_default(tmp_path):
    result, patched = await admit(build(tmp_path), pod("jdoe", labels={QUEUE: "gpu-large"}))
    assert result.allowed and result.patch == ()
    assert patched["metadata"]["labels"][QUEUE] == "gpu-large"


async def test_override_replaces_a_users_queue(tmp_path):
    qm = build(tmp_path, userQueue="Override")
    _, patched = await admit(qm, pod("jdoe", labels={QUEUE: "gpu-large"}))
    assert patched["metadata"]["labels"][QUEUE] == "personal"


async def test_deny_refuses_a_queue_outside_the_class(tmp_path):
    classes = {"personal": {"queueName": "personal"},
               "team": {"queueName": "team", "userQueue": "Deny", "allowedQueues": ["team-large"]}}
    qm = build(tmp_path, classes=classes)
    result, _ = await admit(qm, job("ml-team", labels={QUEUE: "someone-elses"}))
    assert not result.allowed
    assert "someone-elses is not a queue of this team profile: use team, team-large" in result.message
    allowed, patched = await admit(qm, job("ml-team", labels={QUEUE: "team-large"}))
    assert allowed.allowed and patched["metadata"]["labels"][QUEUE] == "team-large"


async def test_a_jobs_pods_are_left_to_the_job(tmp_path):
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "sweep", "uid": "3f1c2b7a-0d4e-4f5a-9b6c-7d8e9f0a1b2c",
             "controller": True, "blockOwnerDeletion": True}
    result, patched = await admit(build(tmp_path), pod("ml-team", name="sweep-x7k2p", owner=owner))
    assert result.allowed and result.patch == ()
    assert QUEUE not in patched["metadata"]["labels"]


async def test_namespaces_outside_profiles_are_not_touched(tmp_path):
    result, _ = await admit(build(tmp_path), pod("default"))
    assert result.patch == ()


async def test_audit_changes_nothing_and_only_warns_on_a_refused_queue(tmp_path):
    classes = {"personal": {"queueName": "personal", "userQueue": "Deny"}}
    qm = build(tmp_path, mode="Audit", classes=classes)
    result, _ = await admit(qm, pod("jdoe"))
    assert result.allowed and result.patch == ()
    assert "would be put into the personal queue personal (Audit)" in [r.message for r in result.results]
    result, _ = await admit(qm, pod("jdoe", labels={QUEUE: "elsewhere"}))
    assert result.allowed and result.patch == () and any("elsewhere" in w for w in result.warnings)


async def test_a_queued_pod_naming_a_resource_claim_is_refused_kueue_would_gate_it_for_good(tmp_path):
    shared = pod("jdoe")
    shared["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared-a100"}]
    shared["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    result, _ = await admit(build(tmp_path), shared)
    assert not result.allowed and "names the ResourceClaim shared-a100" in result.message
    assert "claim templates (resourceClaimTemplateName)" in result.message
    from_template = copy.deepcopy(shared)
    from_template["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-a100"}]
    qm = build(tmp_path)
    result, patched = await admit(qm, from_template)
    assert result.allowed and patched["metadata"]["labels"][QUEUE] == "personal"
    audited, _ = await admit(build(tmp_path, mode="Audit"), shared)
    assert audited.allowed and any("shared-a100" in w for w in audited.warnings)


def test_placeholders_and_bad_names_are_refused_at_load(tmp_path):
    from webhook.app import PolicyLoadFailed
    with pytest.raises(PolicyLoadFailed, match=r"spec.classes.team.queueName"):
        build(tmp_path, classes={"team": {"queueName": "{user}-queue"}})
