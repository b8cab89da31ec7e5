"""docs/quota.md's charging table as data: each row an object shape in a team profile (8 GPUs) and the GPUs it
must be charged. The probe is black-box, through the real server: a dry-run pod asking for `8 - charge` GPUs
must be admitted and one asking for one more refused (an unbounded charge refuses even one GPU)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from tests.platform.quota.builders import claim, device_request, first_available, pod, template

LIMIT = 8  # the default policy's team class
UNBOUNDED = None


@dataclass(frozen=True)
class Row:
    name: str
    objects: tuple[dict[str, Any], ...]
    charge: int | None  # GPUs; None: allocationMode All, which no bounded quota holds


def _uid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def _done(p: dict[str, Any]) -> dict[str, Any]:
    p = copy.deepcopy(p)
    p["status"] = {"phase": "Succeeded"}
    return p


def _owned(c: dict[str, Any], owner: dict[str, Any], api_version: str = "v1", uid: str | None = None) -> dict[str, Any]:
    c = copy.deepcopy(c)
    c["metadata"]["ownerReferences"] = [{"apiVersion": api_version, "kind": "Pod", "name": owner["metadata"]["name"],
                                         "uid": uid or owner["metadata"]["uid"], "controller": True,
                                         "blockOwnerDeletion": True}]
    return c


def _annotated(c: dict[str, Any], pod_claim: str = "gpu") -> dict[str, Any]:
    c = copy.deepcopy(c)
    c["metadata"]["annotations"] = {"resource.kubernetes.io/pod-claim-name": pod_claim}
    return c


def _extended(c: dict[str, Any]) -> dict[str, Any]:
    c = copy.deepcopy(c)
    c["metadata"]["annotations"] = {"resource.kubernetes.io/extended-resource-claim": "true"}
    return c


def _deleting(obj: dict[str, Any]) -> dict[str, Any]:
    """As the API server leaves an object a DELETE could not remove yet (finalizers, a pod's grace period)."""
    obj = copy.deepcopy(obj)
    obj["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z", deletionGracePeriodSeconds=30,
                           finalizers=["resource.kubernetes.io/delete-protection"] if obj["kind"] == "ResourceClaim" else [])
    if not obj["metadata"]["finalizers"]:
        del obj["metadata"]["finalizers"]
    return obj


def _scheduled(p: dict[str, Any], claim_name: str, resource: str = "nvidia.com/gpu") -> dict[str, Any]:
    """The pod as kube-scheduler leaves it after making its KEP-5004 claim (status, which no tenant writes)."""
    p = copy.deepcopy(p)
    p["status"] = {"phase": "Pending", "extendedResourceClaimStatus": {"resourceClaimName": claim_name, "requestMappings": [
        {"containerName": "main", "resourceName": resource, "requestName": "container-0-request-0"}]}}
    return p


def rows() -> list[Row]:
    finished = _done(pod("finished", templates={"gpu": "tpl"}, uid=_uid(1)))
    running = pod("running", templates={"gpu": "tpl"}, uid=_uid(2))
    tpl = template("tpl", "jdoe", device_request(3))
    three = claim("c", "jdoe", device_request(3))
    legacy = pod("legacy", gpus=2, uid=_uid(3))
    scheduled = _scheduled(legacy, "x")
    amd = pod("amd", gpus=2, resource="amd.com/gpu", uid=_uid(4))
    generated_for_finished = _annotated(_owned(three, finished))
    return [
        Row("legacy nvidia.com/gpu pod", (pod("p", gpus=2),), 2),
        Row("finished pod with legacy GPUs", (_done(pod("p", gpus=2)),), 0),
        Row("ResourceClaimTemplate alone (count 3)", (tpl,), 0),
        Row("pod with a template, claim not generated yet", (tpl, running), 3),
        Row("user claim, nobody uses it", (three,), 3),
        Row("user claim shared by three pods", (three, *(pod(f"s{i}", claims={"gpu": "c"}) for i in range(3))), 3),
        Row("user claim owned by a finished pod, wrong uid", (tpl, finished, _annotated(_owned(three, finished, uid=_uid(99)))), 3),
        Row("user claim owned by a finished pod, no annotation", (tpl, finished, _owned(three, finished)), 3),
        Row("user claim owned by a finished pod, not its template entry",
            (tpl, finished, _annotated(_owned(three, finished), pod_claim="other")), 3),
        Row("user claim owned by a finished 'v2' Pod", (tpl, finished, _annotated(_owned(three, finished, api_version="v2"))), 3),
        Row("claim owned by a pod the state does not know", (_annotated(_owned(three, pod("ghost", uid=_uid(7)))),), 3),
        Row("generated claim of a running pod (pod's template not charged again)",
            (tpl, running, _annotated(_owned(three, running))), 3),
        Row("generated claim of a finished pod", (tpl, finished, generated_for_finished), 0),
        Row("generated claim of a finished pod, used by a running pod",
            (tpl, finished, generated_for_finished, pod("user", claims={"gpu": "c"})), 3),
        Row("8-GPU claim, three sharing pods and a 1-GPU pod (issue 13)",
            (claim("big", "jdoe", device_request(8)), *(pod(f"s{i}", claims={"gpu": "big"}) for i in range(3)),
             pod("one", gpus=1)), 9),
        Row("KEP-5004 extended-resource claim of a running pod with 2 legacy GPUs",
            (scheduled, _extended(_owned(claim("x", "jdoe", device_request(2)), legacy))), 2),
        Row("extended-resource claim bigger than its pod's legacy GPUs",
            (scheduled, _extended(_owned(claim("x", "jdoe", device_request(6)), legacy))), 6),
        Row("extended-resource claim naming a pod with the wrong uid",
            (scheduled, _extended(_owned(claim("x", "jdoe", device_request(3)), legacy, uid=_uid(98)))), 5),
        Row("extended-resource claim of a pod, shared with another pod",
            (scheduled, _extended(_owned(claim("x", "jdoe", device_request(2)), legacy)), pod("other", claims={"gpu": "x"})), 4),
        Row("forged extended-resource claim: annotation and ownerReference, no scheduler",
            (legacy, _extended(_owned(claim("x", "jdoe", device_request(2)), legacy))), 4),
        Row("extended-resource claim besides the one its pod's status names",
            (scheduled, _extended(_owned(claim("x", "jdoe", device_request(2)), legacy)),
             _extended(_owned(claim("y", "jdoe", device_request(2)), legacy))), 4),
        Row("extended-resource claim of another device class than its pod's legacy GPUs",
            (_scheduled(amd, "x", "amd.com/gpu"), _extended(_owned(claim("x", "jdoe", device_request(2)), amd))), 4),
        Row("pod asking for deviceclass.resource.kubernetes.io/mig.nvidia.com",
            (pod("p", gpus=3, resource="deviceclass.resource.kubernetes.io/mig.nvidia.com"),), 3),
        Row("pod asking for deviceclass.resource.kubernetes.io/gpu.amd.com",
            (pod("p", gpus=2, resource="deviceclass.resource.kubernetes.io/gpu.amd.com"),), 2),
        Row("claim of vfio.gpu.nvidia.com (NVIDIA's VFIO passthrough class)",
            (claim("v", "jdoe", device_request(2, device_class="vfio.gpu.nvidia.com")),), 2),
        Row("claim being deleted, its delete-protection finalizer still on", (_deleting(three),), 3),
        Row("pod in its grace period (deletionTimestamp set)", (_deleting(pod("p", gpus=2)),), 2),
        Row("claim with firstAvailable 1 or 4", (claim("f", "jdoe", first_available(device_request(1), device_request(4))),), 4),
        Row("claim with allocationMode All", (claim("all", "jdoe", device_request(None, mode="All")),), UNBOUNDED),
        Row("claim of a non-GPU device class", (claim("nic", "jdoe", device_request(4, device_class="nic.example.com")),), 0),
    ]


def profile(index: int) -> dict[str, Any]:
    """A team-class Kubeflow profile namespace for row `index`."""
    name = f"row-{index:02d}"
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {
        "kubernetes.io/metadata.name": name, "app.kubernetes.io/part-of": "kubeflow-profile",
        "quartermaster.dev/profile-class": "team"}, "annotations": {"owner": f"{name}@example.org"}}}


def placed(obj: dict[str, Any], index: int) -> dict[str, Any]:
    """The row's object in the row's namespace; uids are cluster-wide, so each row gets its own."""
    obj = copy.deepcopy(obj)
    obj["metadata"]["namespace"] = f"row-{index:02d}"
    if "uid" in obj["metadata"]:
        obj["metadata"]["uid"] = f"{index:08d}" + obj["metadata"]["uid"][8:]
    for ref in obj["metadata"].get("ownerReferences") or []:
        ref["uid"] = f"{index:08d}" + ref["uid"][8:]
    return obj


def probe(namespace: str, gpus: int) -> dict[str, Any]:
    return pod(f"probe-{gpus}", ns=namespace, gpus=gpus)


def expected_admissions(row: Row) -> list[tuple[int, bool]]:
    """(GPUs the probe asks for, admitted?)"""
    if row.charge is None or row.charge >= LIMIT:
        return [(1, False)]
    free = LIMIT - row.charge
    return [(free, True), (free + 1, False)]
