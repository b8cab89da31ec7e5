"""Kueue with the DRA rewrite and QueueAssignment, end to end on the real control plane (issue 42).

Kueue's own controller manager (tests/cluster/kueue/build, the version its go.mod pins) is installed from its own
manifests (tests/cluster/kueue_install.py) and configured as docs/kueue.md says: the Configuration, ResourceFlavor,
ClusterQueue and LocalQueue are read from that page. Quartermaster is registered as the page says to register it
beside QueueAssignment, and the repository's own QueueAssignment (examples/queue-assignment.yaml) is applied with
kubectl, narrowed to this file's profiles. Then, read back from the API server:
- a legacy GPU pod (a MIG slice, a chosen model, a least memory: the rewrite's CEL selectors, which Kueue checks
  against the published devices) in a profile is rewritten into a claim template and put into the profile's queue
  by Quartermaster, gated by Kueue, admitted by Kueue with the mapped logical resource in its usage, ungated, bound
  by the scheduler, and its claim allocated a device the driver published on a node that satisfies it;
- with a Configuration without the mapping, the same pod's Workload is Inadmissible with a message naming the
  device class, and the pod stays gated; once the mapping is added (Kueue restarted), the same pod runs;
- with Kueue's pod webhook as Kueue ships it (no reinvocation), the queue label Quartermaster adds comes after
  Kueue's webhook has run: the pod is never gated and no Workload is made, which is why the page says IfNeeded;
- a pod that names a ResourceClaim (not a template) is queued all the same and stays gated: Kueue's Workload says
  it does not support resource claims (the page says so);
- a Job's legacy GPUs (its template is not rewritten; its pods are) are counted once on the mapped logical
  resource, by the page's transformations, whether or not the template sets requests; its pod runs rewritten.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from tests.cluster import kueue_install
from tests.cluster.control import ClusterRecord
from tests.cluster.devices import node_devices
from tests.cluster.kube import Kube, eventually
from tests.cluster.kueue_install import API, Kueue, KueueError
from tests.cluster.quartermaster import Installation
from tests.cluster.workloads import job, pod, profile_namespace, unique
from tests.support import REPO

# Kueue's binary first: without it the file is skipped before a control plane starts for it
pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("cluster"), pytest.mark.usefixtures("kueue_binary")]

DOCS = REPO / "docs" / "kueue.md"
DOCS_SECTION = "### DRA: the device-class mapping Kueue needs"
EXAMPLE = REPO / "examples" / "queue-assignment.yaml"
E2E_LABEL = "quartermaster.dev/e2e-kueue"  # only this file's profiles carry it
POLICY_API = "quartermaster.dev/v1alpha1"
RESOURCE = "resource.k8s.io/v1"
GATE = "kueue.x-k8s.io/admission"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
MANAGED_LABEL = "kueue.x-k8s.io/managed"
# docs/kueue.md, "What to configure": with QueueAssignment the mutating webhook gets jobs too, and every pod
QUEUE_WEBHOOKS = {
    "mutate": {"relevanceFilter": False, "rules": [
        {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"]},
        {"apiGroups": ["batch"], "apiVersions": ["v1"], "resources": ["jobs"], "operations": ["CREATE"]}]},
}


def docs_objects() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The Configuration and the Kueue objects of docs/kueue.md's device-class mapping section."""
    text = DOCS.read_text()
    block = text[text.index(DOCS_SECTION):].split("```yaml\n", 1)[1].split("```", 1)[0]
    documents = [d for d in yaml.safe_load_all(block) if d]
    [config] = [d for d in documents if d["kind"] == "Configuration"]
    return config, [d for d in documents if d["kind"] != "Configuration"]


def site_configuration(mapped: bool = True) -> dict[str, Any]:
    """The page's Configuration, managing only this file's profiles; without `mapped`, no deviceClassMappings."""
    config, _ = docs_objects()
    config["managedJobsNamespaceSelector"]["matchLabels"][E2E_LABEL] = "true"
    if not mapped:
        del config["resources"]["deviceClassMappings"]
    return config


def queue_assignment() -> dict[str, Any]:
    """examples/queue-assignment.yaml, for this file's profiles only."""
    policy = yaml.safe_load(EXAMPLE.read_text())
    policy["spec"]["namespaceSelector"]["matchLabels"][E2E_LABEL] = "true"
    return policy


@pytest.fixture(scope="session")
def kueue_binary() -> Path:
    try:
        return kueue_install.binary()
    except KueueError as error:
        if os.environ.get("CI"):
            pytest.fail(str(error))
        pytest.skip(str(error))


def _ready(admin: Kube, name: str) -> bool:
    conditions = ((admin.get(POLICY_API, "QueueAssignment", name) or {}).get("status") or {}).get("conditions", ())
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


@pytest.fixture(scope="module")
def profiles(admin: Kube, kueue: Kueue) -> Iterator[list[str]]:
    """This file's profile namespaces, deleted before Kueue stops."""
    names: list[str] = []
    yield names
    for name in names:
        admin.delete("v1", "Namespace", name)
    # Kueue's finalizers on the pods and Workloads are removed by Kueue: it must run until they are gone
    eventually(lambda: not any(admin.get("v1", "Namespace", n) for n in names), 120, interval=1,
               message="this file's profiles deleted")


@pytest.fixture(scope="module")
def kueue(admin: Kube, control_plane: ClusterRecord, quartermaster: Installation, kueue_binary: Path,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kueue]:
    installed = kueue_install.install(admin, control_plane, tmp_path_factory.mktemp("kueue"), kueue_binary)
    _, objects = docs_objects()
    cluster_objects = [o for o in objects if o["kind"] != "LocalQueue"]
    admin.apply_all(cluster_objects)
    quartermaster.register({**quartermaster.values, "webhooks": QUEUE_WEBHOOKS})
    policy = queue_assignment()
    served = quartermaster.policy_counts()
    admin.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(policy))
    try:
        eventually(lambda: all(now > before for now, before in zip(quartermaster.policy_counts(), served)), 60,
                   interval=0.5, message="the QueueAssignment served by every replica")
        eventually(lambda: _ready(admin, policy["metadata"]["name"]), 60, message="the QueueAssignment Ready")
        yield installed
    finally:
        admin.delete(POLICY_API, "QueueAssignment", policy["metadata"]["name"])
        # gone from every replica before the next file counts the policies served
        eventually(lambda: quartermaster.policy_counts() == served, 60, interval=0.5,
                   message="the QueueAssignment no longer served")
        quartermaster.register()
        for obj in reversed(cluster_objects):
            admin.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"])
        installed.stop()


def make_queued_profile(admin: Kube, profiles: list[str]) -> str:
    """A personal profile of this file, with the page's LocalQueue in it."""
    namespace = profile_namespace(unique("kueue"))
    namespace["metadata"]["labels"][E2E_LABEL] = "true"
    admin.create(namespace)
    name = namespace["metadata"]["name"]
    profiles.append(name)
    eventually(lambda: admin.get("v1", "ServiceAccount", "default", name), 30, message=f"{name}/default SA")
    _, objects = docs_objects()
    [local_queue] = [o for o in objects if o["kind"] == "LocalQueue"]
    local_queue["metadata"]["namespace"] = name
    admin.apply_all([local_queue])
    return name


def create(admin: Kube, obj: dict[str, Any]) -> dict[str, Any]:
    """Create with kubectl as a user does; the pod as the API server stored it, after every webhook."""
    return yaml.safe_load(admin.kubectl_create(obj).stdout)


def gates(stored: dict[str, Any]) -> list[str]:
    return [g["name"] for g in stored["spec"].get("schedulingGates") or ()]


def workload_of(admin: Kube, namespace: str, pod_name: str) -> dict[str, Any] | None:
    for workload in admin.list(API, "Workload", namespace):
        if any(o["kind"] == "Pod" and o["name"] == pod_name for o in workload["metadata"].get("ownerReferences", ())):
            return workload
    return None


def condition(workload: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    conditions = ((workload or {}).get("status") or {}).get("conditions") or ()
    return next((c for c in conditions if c["type"] == kind), {})


def admitted(admin: Kube, kueue: Kueue, namespace: str, pod_name: str) -> dict[str, Any]:
    """The pod's Workload, once Kueue admitted it."""
    def check() -> dict[str, Any] | None:
        kueue.assert_running()
        workload = workload_of(admin, namespace, pod_name)
        return workload if condition(workload, "Admitted").get("status") == "True" else None
    return eventually(check, 90, message=f"the Workload of {namespace}/{pod_name} admitted")


def refused(admin: Kube, kueue: Kueue, namespace: str, pod_name: str) -> dict[str, Any]:
    """The QuotaReserved condition of the pod's Workload, once Kueue refused to reserve quota for it."""
    def check() -> dict[str, Any] | None:
        kueue.assert_running()
        reserved = condition(workload_of(admin, namespace, pod_name), "QuotaReserved")
        return reserved if reserved.get("status") == "False" and reserved.get("message") else None
    return eventually(check, 60, message=f"the Workload of {namespace}/{pod_name} refused a reservation")


def assert_queued_by_quartermaster_and_gated_by_kueue(admin: Kube, stored: dict[str, Any], device_class: str,
                                                      limit: str) -> None:
    namespace = stored["metadata"]["namespace"]
    labels = stored["metadata"]["labels"]
    assert labels[QUEUE_LABEL] == "personal", labels  # QueueAssignment, the personal class's queue
    assert labels.get(MANAGED_LABEL) == "true", labels  # Kueue's pod webhook, reinvoked after the label came
    assert GATE in gates(stored), stored["spec"].get("schedulingGates")
    assert limit not in stored["spec"]["containers"][0]["resources"].get("limits", {})
    [reference] = stored["spec"]["resourceClaims"]
    template = admin.get(RESOURCE, "ResourceClaimTemplate", reference["resourceClaimTemplateName"], namespace)
    assert template is not None, reference
    [request] = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["deviceClassName"] == device_class


def allocated(admin: Kube, running: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(node, the device as the driver published it, the claim) of the pod's one claim."""
    namespace = running["metadata"]["namespace"]
    [status] = running["status"]["resourceClaimStatuses"]
    claim = admin.get(RESOURCE, "ResourceClaim", status["resourceClaimName"], namespace)
    [result] = claim["status"]["allocation"]["devices"]["results"]
    published = {d["name"]: d for d in node_devices()[result["pool"]]}
    return result["pool"], published[result["device"]], claim


@dataclass(frozen=True)
class Asked:
    """A legacy request as a user writes it, and where the rewrite, Kueue and the scheduler must take it."""
    limit: str
    annotations: dict[str, str]
    device_class: str
    logical: str  # the docs' mapping of the class
    nodes: tuple[str, ...]  # where a device that satisfies it is published


FULL_GPUS = ("gpu-t4-0", "gpu-a100-40-0", "gpu-a100-80-0", "gpu-h100-0")
ASKED = {
    "gpu": Asked("nvidia.com/gpu", {}, "gpu.nvidia.com", "gpus.example.org/nvidia", FULL_GPUS),
    "mig": Asked("nvidia.com/mig-1g.5gb", {}, "mig.nvidia.com", "gpus.example.org/nvidia-mig", ("gpu-a100-mig-0",)),
    # the rewrite's CEL selectors, which Kueue evaluates against the published devices before it admits
    "model": Asked("nvidia.com/gpu", {"quartermaster.dev/gpu-model": "a100-40gb"}, "gpu.nvidia.com",
                   "gpus.example.org/nvidia", ("gpu-a100-40-0",)),
    "memory": Asked("nvidia.com/gpu", {"quartermaster.dev/gpu-memory": "70Gi"}, "gpu.nvidia.com",
                    "gpus.example.org/nvidia", ("gpu-a100-80-0", "gpu-h100-0")),
}


@pytest.mark.parametrize("case", ASKED)
def test_a_legacy_gpu_pod_is_queued_admitted_through_the_mapping_and_given_a_device(
        admin: Kube, kueue: Kueue, profiles: list[str], case: str) -> None:
    asked = ASKED[case]
    kueue.start(site_configuration())
    namespace = make_queued_profile(admin, profiles)
    stored = create(admin, pod("train", namespace, limits={asked.limit: 1}, annotations=asked.annotations or None))
    assert_queued_by_quartermaster_and_gated_by_kueue(admin, stored, asked.device_class, asked.limit)

    workload = admitted(admin, kueue, namespace, "train")
    admission = workload["status"]["admission"]
    assert admission["clusterQueue"] == "ml-team"
    [assignment] = admission["podSetAssignments"]
    assert assignment["resourceUsage"][asked.logical] == "1", assignment
    assert assignment["flavors"][asked.logical] == "default", assignment

    running = admin.wait_pod(namespace, "train", timeout=90)
    assert GATE not in gates(running)
    node, device, claim = allocated(admin, running)
    assert running["spec"]["nodeName"] == node and node in asked.nodes, (node, asked.nodes)
    if asked.device_class == "mig.nvidia.com":
        assert device["attributes"]["profile"] == {"string": "1g.5gb"}
    else:
        assert device["attributes"]["type"] == {"string": "gpu"}
    assert claim["status"]["reservedFor"][0]["name"] == "train"


def test_without_the_mapping_the_workload_is_inadmissible_and_the_pod_stays_gated(
        admin: Kube, kueue: Kueue, profiles: list[str]) -> None:
    kueue.start(site_configuration(mapped=False))
    namespace = make_queued_profile(admin, profiles)
    stored = create(admin, pod("train", namespace, limits={"nvidia.com/gpu": 1}))
    assert_queued_by_quartermaster_and_gated_by_kueue(admin, stored, "gpu.nvidia.com", "nvidia.com/gpu")

    reserved = refused(admin, kueue, namespace, "train")
    assert reserved["reason"] == "Inadmissible", reserved
    assert "DeviceClass gpu.nvidia.com is not mapped" in reserved["message"], reserved["message"]
    workload = workload_of(admin, namespace, "train")
    # Kueue will not try it again by itself: only a changed Configuration (or Workload) brings it back
    requeued = condition(workload, "Requeued")
    assert requeued.get("status") == "False" and requeued.get("reason") == "Inadmissible", requeued
    assert condition(workload, "Admitted").get("status") != "True"
    still = admin.get("v1", "Pod", "train", namespace)
    assert GATE in gates(still) and not still["spec"].get("nodeName"), still["spec"]

    # the page's fix: the mapping added to the Configuration, Kueue restarted; the same pod is admitted and runs
    kueue.start(site_configuration())
    admitted(admin, kueue, namespace, "train")
    running = admin.wait_pod(namespace, "train", timeout=90)
    assert allocated(admin, running)[0] == running["spec"]["nodeName"]


def test_without_reinvocation_kueues_pod_webhook_misses_the_queue_label(
        admin: Kube, kueue: Kueue, profiles: list[str]) -> None:
    kueue.start(site_configuration(), pod_reinvocation=None)
    try:
        namespace = make_queued_profile(admin, profiles)
        stored = create(admin, pod("train", namespace, limits={"nvidia.com/gpu": 1}))
        assert stored["metadata"]["labels"][QUEUE_LABEL] == "personal"  # Quartermaster labelled it...
        assert MANAGED_LABEL not in stored["metadata"]["labels"]  # ...after Kueue's webhook had run
        assert not gates(stored)
        running = admin.wait_pod(namespace, "train", timeout=90)  # not queued: scheduled at once
        assert running["spec"]["nodeName"]
        assert workload_of(admin, namespace, "train") is None
    finally:
        kueue.start(site_configuration())


def test_kueue_admits_claim_templates_only_so_a_queued_pod_naming_a_claim_is_refused(
        admin: Kube, kueue: Kueue, profiles: list[str]) -> None:
    """Kueue's DRA support counts claim templates; a pod that names a ResourceClaim (a claim shared by pods, which
    the profile quota counts once) is Inadmissible there and would stay gated for good: QueueAssignment refuses it
    at create, saying why (docs/kueue.md)."""
    kueue.start(site_configuration())
    namespace = make_queued_profile(admin, profiles)
    admin.kubectl_create({"apiVersion": RESOURCE, "kind": "ResourceClaim",
                          "metadata": {"name": "shared", "namespace": namespace},
                          "spec": {"devices": {"requests": [{"name": "gpu",
                                                             "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}})
    user_pod = pod("train", namespace)
    user_pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared"}]
    user_pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    result = admin.kubectl_create(user_pod, check=False)
    assert result.returncode != 0, result.stdout
    assert "names the ResourceClaim shared" in result.stderr and "claim templates" in result.stderr, result.stderr
    assert admin.get("v1", "Pod", "train", namespace) is None and workload_of(admin, namespace, "train") is None



def job_admitted(admin: Kube, kueue: Kueue, namespace: str) -> dict[str, Any]:
    """The Workload of the namespace's one Job, once Kueue admitted it."""
    def check() -> dict[str, Any] | None:
        kueue.assert_running()
        workloads = admin.list(API, "Workload", namespace)
        return next((w for w in workloads if condition(w, "Admitted").get("status") == "True"), None)
    return eventually(check, 90, message=f"the Workload of the Job in {namespace} admitted")


def legacy_job(namespace: str, limit: str, requests: bool) -> dict[str, Any]:
    """A Job asking one device by its legacy name in its limits (and its requests)."""
    written = job("train", namespace, limits={limit: 1})
    if requests:
        written["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] = {limit: 1}
    return written


@pytest.mark.parametrize("case", ["gpu", "gpu with requests", "mig"])
def test_a_jobs_legacy_gpus_are_counted_once_on_the_mapped_resource_and_its_pod_rewritten(
        admin: Kube, kueue: Kueue, profiles: list[str], case: str) -> None:
    """A Job's pod template keeps the legacy names (the rewrite is made per pod, when the Job's pod is created):
    Kueue counts them by the page's transformations, on the same logical resources as the claims."""
    asked = ASKED["mig" if case == "mig" else "gpu"]
    kueue.start(site_configuration())
    namespace = make_queued_profile(admin, profiles)
    stored = create(admin, legacy_job(namespace, asked.limit, requests=case.endswith("requests")))
    assert stored["metadata"]["labels"][QUEUE_LABEL] == "personal" and stored["spec"]["suspend"] is True

    [assignment] = job_admitted(admin, kueue, namespace)["status"]["admission"]["podSetAssignments"]
    assert assignment["resourceUsage"][asked.logical] == "1", assignment
    assert asked.limit not in assignment["resourceUsage"], assignment

    [running] = eventually(lambda: [p for p in admin.list("v1", "Pod", namespace, label_selector="job-name=train")
                                    if p["status"].get("phase") == "Running"], 90, message="the Job's pod running")
    resources = running["spec"]["containers"][0]["resources"]
    assert asked.limit not in resources.get("limits", {}) and asked.limit not in resources.get("requests", {})
    assert not gates(running)  # the Job was queued, not its pod
    node, _, _ = allocated(admin, running)
    assert running["spec"]["nodeName"] == node and node in asked.nodes, (node, asked.nodes)


def test_with_kueues_extended_resource_gate_on_a_job_that_sets_requests_is_counted_twice(
        admin: Kube, kueue: Kueue, profiles: list[str]) -> None:
    """Why the page turns KueueDRAIntegrationExtendedResource off: on (Kueue 0.19's default), a requested
    `nvidia.com/gpu` whose DeviceClass names it (`extendedResourceName`) is counted through the class's mapping as
    well as by the transformation."""
    site = site_configuration()
    del site["featureGates"]["KueueDRAIntegrationExtendedResource"]
    kueue.start(site)
    namespace = make_queued_profile(admin, profiles)
    create(admin, legacy_job(namespace, "nvidia.com/gpu", requests=True))
    [assignment] = job_admitted(admin, kueue, namespace)["status"]["admission"]["podSetAssignments"]
    assert assignment["resourceUsage"]["gpus.example.org/nvidia"] == "2", assignment
