"""Pods created as users create them, through the real API server, controllers and scheduler, with Quartermaster
registered through the chart's webhook configurations: what the API server stored is what the standalone path
(`quartermaster apply`) predicted, and the scheduler allocates a device that the rewritten claim selects."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.cluster.devices import node_devices
from tests.cluster.kube import Kube, eventually
from tests.cluster.predict import Prediction, assert_stored_as_predicted, predict
from tests.cluster.quartermaster import Installation
from tests.cluster.workloads import deployment, job, make_profile, pod, pods_of

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("cluster")]

RESOURCE = "resource.k8s.io/v1"


def _claims_of(admin: Kube, stored_pod: dict[str, Any]) -> list[dict[str, Any]]:
    """The ResourceClaims the resourceclaim controller made for the pod, as its status names them."""
    namespace = stored_pod["metadata"]["namespace"]
    statuses = stored_pod.get("status", {}).get("resourceClaimStatuses") or []
    return [admin.get(RESOURCE, "ResourceClaim", s["resourceClaimName"], namespace) for s in statuses
            if s.get("resourceClaimName")]


def _allocated_device(claim: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(node, device as published) of a claim's single allocated device."""
    results = claim["status"]["allocation"]["devices"]["results"]
    assert len(results) == 1, results
    result = results[0]
    published = {d["name"]: d for d in node_devices()[result["pool"]]}
    return result["pool"], published[result["device"]]


def _admitted_as_predicted(admin: Kube, tmp_path, namespace: dict[str, Any],
                           obj: dict[str, Any]) -> tuple[dict[str, Any], Prediction]:
    """Create `obj` with kubectl once `quartermaster apply` admitted it, and check the Running pod the API server
    stored against that prediction."""
    predicted = predict(tmp_path, namespace, obj)
    assert predicted.returncode == 0, predicted.table
    admin.kubectl_create(obj)
    stored = admin.wait_pod(namespace["metadata"]["name"], obj["metadata"]["name"])
    assert_stored_as_predicted(predicted.admitted, stored)
    return stored, predicted


def test_a_plain_pod_is_stored_as_written(admin: Kube, quartermaster: Installation, tmp_path) -> None:
    namespace = make_profile(admin)
    name = namespace["metadata"]["name"]
    stored, predicted = _admitted_as_predicted(admin, tmp_path, namespace, pod("plain", name))
    assert predicted.created("ResourceClaimTemplate") == []
    assert not stored["spec"].get("resourceClaims")
    assert stored["spec"]["nodeName"]


def test_a_legacy_gpu_pod_becomes_a_claim_the_scheduler_allocates(admin: Kube, quartermaster: Installation,
                                                                   tmp_path) -> None:
    namespace = make_profile(admin)
    name = namespace["metadata"]["name"]
    stored, predicted = _admitted_as_predicted(admin, tmp_path, namespace,
                                               pod("train", name, limits={"nvidia.com/gpu": 1}))
    [template] = predicted.created("ResourceClaimTemplate")
    stored_template = admin.get(RESOURCE, "ResourceClaimTemplate", template["metadata"]["name"], name)
    assert stored_template is not None, "the claim template the pod needs was not created through the API"
    assert_stored_as_predicted(template, stored_template)
    assert "nvidia.com/gpu" not in stored["spec"]["containers"][0]["resources"].get("limits", {})

    [claim] = _claims_of(admin, stored)
    node, device = _allocated_device(claim)
    assert stored["spec"]["nodeName"] == node
    assert device["attributes"]["type"] == {"string": "gpu"}
    assert claim["status"]["reservedFor"][0]["name"] == "train"


def test_a_mig_pod_gets_a_slice_of_its_profile(admin: Kube, quartermaster: Installation, tmp_path) -> None:
    namespace = make_profile(admin)
    name = namespace["metadata"]["name"]
    mig_pod = pod("mig", name, limits={"nvidia.com/mig-1g.10gb": 1})
    stored, _ = _admitted_as_predicted(admin, tmp_path, namespace, mig_pod)
    [claim] = _claims_of(admin, stored)
    node, device = _allocated_device(claim)
    assert node == "gpu-h100-mig-0"
    assert device["attributes"]["profile"] == {"string": "1g.10gb"}
    assert device["attributes"]["type"] == {"string": "mig"}


@pytest.mark.parametrize("model, pool", [("a100-80gb", "gpu-a100-80-0"), ("t4", "gpu-t4-0"),
                                         ("h100-pcie", "gpu-h100-0")])
def test_the_chosen_model_is_the_model_allocated(admin: Kube, quartermaster: Installation, tmp_path,
                                                 model: str, pool: str) -> None:
    namespace = make_profile(admin)
    name = namespace["metadata"]["name"]
    chosen = pod("chosen", name, limits={"nvidia.com/gpu": 1}, annotations={"quartermaster.dev/gpu-model": model})
    stored, _ = _admitted_as_predicted(admin, tmp_path, namespace, chosen)
    [claim] = _claims_of(admin, stored)
    node, _ = _allocated_device(claim)
    assert node == pool


def test_a_request_no_device_satisfies_stays_pending_with_the_schedulers_reason(admin: Kube,
                                                                                 quartermaster: Installation) -> None:
    namespace = make_profile(admin)
    name = namespace["metadata"]["name"]
    # no node publishes a 7g.80gb slice
    admin.kubectl_create(pod("big-mig", name, limits={"nvidia.com/mig-7g.80gb": 1}))

    def unschedulable() -> dict[str, Any] | None:
        stored = admin.get("v1", "Pod", "big-mig", name)
        conditions = {c["type"]: c for c in (stored or {}).get("status", {}).get("conditions") or []}
        scheduled = conditions.get("PodScheduled")
        return scheduled if scheduled and scheduled.get("reason") == "Unschedulable" else None
    condition = eventually(unschedulable, 60, message="the scheduler's Unschedulable condition")
    assert admin.get("v1", "Pod", "big-mig", name)["status"]["phase"] == "Pending"
    assert "cannot allocate all claims" in condition["message"], condition["message"]


def test_a_deployments_pods_are_rewritten(admin: Kube, quartermaster: Installation) -> None:
    namespace = make_profile(admin)
    name = namespace["metadata"]["name"]
    admin.kubectl_create(deployment("serve", name, limits={"nvidia.com/gpu": 1}))
    [running] = eventually(lambda: [p for p in pods_of(admin, name, "app=serve")
                                    if p["status"].get("phase") == "Running"], 90,
                           message="the ReplicaSet's pod running")
    assert running["spec"]["resourceClaims"], "the ReplicaSet controller's pod was not rewritten"
    assert "nvidia.com/gpu" not in running["spec"]["containers"][0]["resources"].get("limits", {})
    [claim] = _claims_of(admin, running)
    assert _allocated_device(claim)[1]["attributes"]["type"] == {"string": "gpu"}


def test_a_jobs_pod_is_rewritten(admin: Kube, quartermaster: Installation) -> None:
    namespace = make_profile(admin)
    name = namespace["metadata"]["name"]
    admin.kubectl_create(job("batch", name, limits={"nvidia.com/mig-1g.5gb": 1}))
    [running] = eventually(lambda: [p for p in pods_of(admin, name, "job-name=batch")
                                    if p["status"].get("phase") == "Running"], 90,
                           message="the Job's pod running")
    [claim] = _claims_of(admin, running)
    node, device = _allocated_device(claim)
    assert node == "gpu-a100-mig-0" and device["attributes"]["profile"] == {"string": "1g.5gb"}


def test_a_server_dry_run_shows_the_rewrite_and_leaves_nothing_behind(admin: Kube, quartermaster: Installation,
                                                                       tmp_path) -> None:
    namespace = make_profile(admin)
    name = namespace["metadata"]["name"]
    gpu_pod = pod("dry", name, limits={"nvidia.com/gpu": 1})
    predicted = predict(tmp_path, namespace, gpu_pod)
    shown = admin.kubectl_create(gpu_pod, extra=("--dry-run=server",))
    dry = json.loads(shown.stdout)
    assert_stored_as_predicted(predicted.admitted, dry)
    assert admin.get("v1", "Pod", "dry", name) is None
    assert admin.list(RESOURCE, "ResourceClaimTemplate", name) == [], "a dry run created a claim template"


def test_a_server_dry_run_over_the_quota_is_refused_as_the_real_create_is(admin: Kube, quartermaster: Installation,
                                                                           tmp_path) -> None:
    """The dry run creates no claim template; the pod is judged with it laid over all the same."""
    namespace = make_profile(admin)  # one GPU
    name = namespace["metadata"]["name"]
    two = pod("two", name, limits={"nvidia.com/gpu": 2})
    dry = admin.kubectl_create(two, extra=("--dry-run=server",), check=False)
    assert dry.returncode != 0, dry.stdout
    assert admin.list(RESOURCE, "ResourceClaimTemplate", name) == [], "a dry run created a claim template"
    real = admin.kubectl_create(two, check=False)
    assert real.returncode != 0, real.stdout
    assert admin.get("v1", "Pod", "two", name) is None
    reason = real.stderr.split("denied the request: ", 1)[-1].strip()
    assert "GPU" in reason and reason in dry.stderr, (dry.stderr, real.stderr)


def test_system_namespaces_are_not_sent_to_the_webhook(admin: Kube, quartermaster: Installation) -> None:
    system_pod = pod("system-gpu", "kube-system", limits={"nvidia.com/gpu": 1})
    dry = json.loads(admin.kubectl_create(system_pod, extra=("--dry-run=server",)).stdout)
    assert not dry["spec"].get("resourceClaims")
    assert dry["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
