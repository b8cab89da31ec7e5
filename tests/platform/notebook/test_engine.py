"""NotebookInjection inside the whole webhook: beside the DRA rewrite in either order, over HTTPS, in Audit mode."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import REPO, STATEFULSET_CONTROLLER, apply_patch, assert_valid_k8s, decode_patch, load_yaml, review, running_server
from webhook.app import Quartermaster, Settings
from webhook.engine.dispatch import MutateResult
from webhook.model.review import parse_review
from webhook.state.memory import InMemoryClusterState

POLICIES = REPO / "policies"
NOTEBOOK_POLICY = POLICIES / "notebook-injection.yaml"
DRA_POLICY = POLICIES / "device-claim-rewrite.yaml"
STATE = REPO / "examples" / "state"
POD = load_yaml(REPO / "examples" / "notebook-pod.yaml")[0]


def gpu_notebook() -> dict[str, Any]:
    pod = copy.deepcopy(POD)
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1"
    return pod


def engine_with(tmp_path: Path, *files: Path) -> Quartermaster:
    """The given policy files, in this order (the snapshot keeps file order)."""
    for index, path in enumerate(files):
        shutil.copy(path, tmp_path / f"{index:02d}-{path.name}")
    qm = Quartermaster.build(Settings(policies=tmp_path), state=InMemoryClusterState.from_directory(STATE))
    qm.load_policies()
    return qm


async def mutate(qm: Quartermaster, pod: dict[str, Any], dry_run: bool = False) -> MutateResult:
    return await qm.engine.mutate(parse_review(json.dumps(review(pod, dry_run=dry_run, username=STATEFULSET_CONTROLLER)).encode()))


async def admitted(qm: Quartermaster, pod: dict[str, Any]) -> dict[str, Any]:
    result = await mutate(qm, pod)
    assert result.verdict.allowed, result.verdict.message
    patched = apply_patch(pod, list(result.verdict.patch))
    assert_valid_k8s(patched)
    return patched


@pytest.mark.parametrize("order", ["rewrite-first", "inject-first"])
async def test_with_the_gpu_rewrite_in_either_order(tmp_path: Path, order: str) -> None:
    files = (DRA_POLICY, NOTEBOOK_POLICY) if order == "rewrite-first" else (NOTEBOOK_POLICY, DRA_POLICY)
    qm = engine_with(tmp_path, *files)
    pod = await admitted(qm, gpu_notebook())
    notebook = pod["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in notebook["resources"]["limits"], "the rewrite ran"
    assert pod["spec"]["resourceClaims"] and notebook["resources"]["claims"]
    (sidecar,) = pod["spec"]["initContainers"]
    assert sidecar["name"] == "oidc-token-refresher" and "claims" not in sidecar.get("resources", {})
    # the API server calls every mutating webhook again after another one changed the pod: nothing more to do
    again = await mutate(qm, pod)
    assert again.verdict.allowed and again.verdict.patch == ()


async def test_the_order_does_not_change_the_result(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = await admitted(engine_with(tmp_path / "a", DRA_POLICY, NOTEBOOK_POLICY), gpu_notebook())
    second = await admitted(engine_with(tmp_path / "b", NOTEBOOK_POLICY, DRA_POLICY), gpu_notebook())
    assert first == second


async def test_over_https_then_reinvoked(tmp_path: Path) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    shutil.copy(NOTEBOOK_POLICY, policies)
    async with running_server(policies, tmp_path, state=STATE) as server:
        response = await server.admit("/mutate", review(POD, username=STATEFULSET_CONTROLLER))
        assert response["allowed"] is True
        patched = apply_patch(POD, decode_patch(response))
        assert_valid_k8s(patched)
        assert [c["name"] for c in patched["spec"]["initContainers"]] == ["oidc-token-refresher"]
        again = await server.admit("/mutate", review(patched, username=STATEFULSET_CONTROLLER))
        assert again["allowed"] is True and "patch" not in again
        # a pod that is not a notebook is not even matched
        plain = copy.deepcopy(POD)
        del plain["metadata"]["labels"]["notebook-name"]
        untouched = await server.admit("/mutate", review(plain, username=STATEFULSET_CONTROLLER))
        assert untouched["allowed"] is True and "patch" not in untouched and "warnings" not in untouched


async def test_a_conflict_is_a_403_that_names_both_sides(tmp_path: Path) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    shutil.copy(NOTEBOOK_POLICY, policies)
    pod = copy.deepcopy(POD)
    pod["spec"]["volumes"].append({"name": "oidc-token", "emptyDir": {}})
    async with running_server(policies, tmp_path, state=STATE) as server:
        response = await server.admit("/mutate", review(pod, username=STATEFULSET_CONTROLLER))
    assert response["allowed"] is False and response["status"]["code"] == 403
    message = response["status"]["message"]
    assert "volume 'oidc-token'" in message
    assert 'the pod has {"emptyDir":{}}' in message
    assert 'the policy injects {"emptyDir":{"medium":"Memory","sizeLimit":"1Mi"}}' in message


async def test_audit_mode_reports_and_changes_nothing(tmp_path: Path) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    doc = load_yaml(NOTEBOOK_POLICY)[0]
    doc["spec"]["mode"] = "Audit"
    (policies / "notebook.yaml").write_text(yaml.safe_dump(doc))
    pod = copy.deepcopy(POD)
    pod["spec"]["volumes"].append({"name": "eos", "persistentVolumeClaim": {"claimName": "my-data"}})
    async with running_server(policies, tmp_path, state=STATE) as server:
        response = await server.admit("/mutate", review(pod, username=STATEFULSET_CONTROLLER))
    assert response["allowed"] is True and "patch" not in response
    assert response["warnings"][0].startswith("notebook-home-and-token: not injected, a conflict with the pod")
    (annotation,) = response["auditAnnotations"].values()
    assert "volume 'eos'" in annotation and "my-data" in annotation and "claimName" in annotation


async def test_a_missing_owner_is_denied_and_dry_run_is_the_same(tmp_path: Path) -> None:
    state = [*load_yaml(STATE / "profiles.yaml"),
             {"apiVersion": "v1", "kind": "Namespace",
              "metadata": {"name": "orphan", "labels": {"app.kubernetes.io/part-of": "kubeflow-profile"}}}]
    shutil.copy(NOTEBOOK_POLICY, tmp_path)
    qm = Quartermaster.build(Settings(policies=tmp_path), state=InMemoryClusterState(state))
    qm.load_policies()
    pod = copy.deepcopy(POD)
    pod["metadata"]["namespace"] = "orphan"
    for dry_run in (False, True):
        result = await mutate(qm, pod, dry_run=dry_run)
        assert not result.verdict.allowed and result.verdict.code == 403
        assert "namespace orphan has no 'owner' annotation" in result.verdict.message
