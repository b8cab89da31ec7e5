"""docs/quota.md's charging table replayed against the real API server: each row's objects created as a tenant,
the resourceclaim controller and the scheduler make them, the profile's charge then measured by dry-run probe pods
through the API server (two Quartermaster replicas behind it), as tests/platform/quota/test_bypass.py measures it
standalone.

How each row is built (the row data is tests/platform/quota/bypass_table.py):
- Every row gets a namespace that becomes a team profile only once its objects exist: rows over the limit could
  not be created otherwise, and the DRA rewrite (profiles only) would turn the legacy pods into claim pods.
- Pods carry a scheduling gate: no node runs them and the scheduler makes no claim of its own, so each pod stays
  in the state the row names. The exception is the pod in its grace period: an unscheduled pod has none (the API
  server removes it at once, and the pod garbage collector marks one held by a finalizer Failed, which frees its
  GPUs), so that pod is bound to a node (`spec.nodeName`, written at creation, since the pool's devices may be
  held by other tests' pods), runs, and is deleted with a grace period the simulated kubelet waits out. The API server assigns uids; ownerReferences that name a row's pod get its real
  uid, a deliberately wrong uid stays wrong.
- `status` is written through the status subresource, as the component that owns it would: a pod's phase, and
  `extendedResourceClaimStatus` by `system:kube-scheduler` (impersonated), who also creates the claim it names.
- A claim the resourceclaim controller generates in the table (annotation and ownerReference to a pod that has
  that template entry) is the controller's own, generated from the pod's template.
- Controllers delete what the table keeps: the garbage collector a claim whose owner uid does not exist, the
  resourceclaim controller every claim whose owning pod is done or was replaced. A tenant's finalizer keeps such a
  claim (as any tenant may write one) with its deletionTimestamp set; a deleting claim is charged like any
  other, so the charge still depends only on the ownership checks. The claim being deleted is deleted for real,
  held by the same finalizer (the resourceclaim controller takes delete-protection off a claim no pod reserved).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest
from kubernetes.client import ApiException

from tests.cluster.control import ClusterRecord, start_component, stop_component
from tests.cluster.kube import Kube, eventually
from tests.cluster.quartermaster import Installation
from tests.platform.quota.bypass_table import LIMIT, Row, expected_admissions, rows
from tests.platform.quota.builders import claim, device_request, pod, template

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("cluster")]

ROWS = rows()
GATE = "quartermaster.dev/bypass-table"
HOLD = "quartermaster.dev/bypass-table-hold"  # a tenant's finalizer
GRACE_SECONDS = 3600  # longer than any test run: the simulated kubelet is still stopping the pod
GRACE_NODE = "gpu-h100-0"
SCHEDULER = "system:kube-scheduler"
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
PROFILE_LABELS = {"app.kubernetes.io/part-of": "kubeflow-profile", "quartermaster.dev/profile-class": "team"}
# The resourceclaim controller generates a pod's claim the moment the pod exists: this row's state holds only while
# the controller manager is down, so it has its own test that stops it.
UNGENERATED = "pod with a template, claim not generated yet"
TABLE_ROWS = [row for row in ROWS if row.name != UNGENERATED]


def impersonating(admin: Kube, qmcluster: Path, user: str) -> Kube:
    kube = Kube(admin.record, admin.kubeconfig, qmcluster)
    kube.api_client.set_default_header("Impersonate-User", user)
    return kube


def create(kube: Kube, body: dict[str, Any]) -> dict[str, Any]:
    """Create, again while a replica's informer has not delivered the new namespace yet (the quota refuses what it
    cannot place, and says to try again in a moment)."""
    refusal: list[str] = []

    def attempt() -> dict[str, Any] | None:
        try:
            return kube.create(body)
        except ApiException as error:
            if error.status != 403 or "does not know namespace" not in (error.body or ""):
                raise
            refusal[:] = [error.body or ""]
            return None
    return eventually(attempt, 30, message=f"{body['kind']} {_meta(body)['name']} created: {refusal}")


@dataclass
class Built:
    """What the API server made of one row: its namespace and the names and uids it assigned."""
    namespace: str
    uids: dict[str, str] = field(default_factory=dict)  # the table's placeholder uid -> the real one
    claim_names: dict[str, str] = field(default_factory=dict)  # the table's claim name -> the stored one
    held: list[str] = field(default_factory=list)  # claims carrying HOLD
    terminating: list[str] = field(default_factory=list)  # pods deleted with GRACE_SECONDS


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["metadata"]


def _owner(obj: dict[str, Any]) -> dict[str, Any] | None:
    refs = _meta(obj).get("ownerReferences") or []
    return refs[0] if refs else None


def _generated_by_controller(claim: dict[str, Any], row: Row) -> dict[str, Any] | None:
    """The row's pod whose template entry this claim is generated from, as the resourceclaim controller makes it."""
    ref = _owner(claim)
    entry = (_meta(claim).get("annotations") or {}).get(POD_CLAIM_ANNOTATION)
    if ref is None or entry is None or ref["apiVersion"] != "v1":
        return None
    for obj in row.objects:
        if obj["kind"] == "Pod" and _meta(obj).get("uid") == ref["uid"] and _meta(obj)["name"] == ref["name"] and any(
                e["name"] == entry and e.get("resourceClaimTemplateName") for e in obj["spec"].get("resourceClaims", [])):
            return obj
    return None


def _named_by_status(claim: dict[str, Any], row: Row) -> bool:
    """The claim a scheduled pod of the row names in its status: the scheduler made it."""
    return any(((o.get("status") or {}).get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
               == _meta(claim)["name"] for o in row.objects if o["kind"] == "Pod")


class RowBuilder:
    def __init__(self, admin: Kube, scheduler: Kube, built: Built) -> None:
        self.admin, self.scheduler, self.built = admin, scheduler, built

    def pod(self, obj: dict[str, Any]) -> None:
        body = copy.deepcopy(obj)
        placeholder = _meta(body).pop("uid", None)
        body.pop("status", None)
        _meta(body).pop("deletionTimestamp", None)
        _meta(body).pop("deletionGracePeriodSeconds", None)
        _meta(body)["namespace"] = self.built.namespace
        terminating = "deletionTimestamp" in obj["metadata"]
        if terminating:
            body["spec"].update(terminationGracePeriodSeconds=GRACE_SECONDS, nodeName=GRACE_NODE)
            self.built.terminating.append(_meta(body)["name"])
        else:
            body["spec"]["schedulingGates"] = [{"name": GATE}]
        for entry in body["spec"].get("resourceClaims", []):
            if entry.get("resourceClaimName"):
                entry["resourceClaimName"] = self.built.claim_names.get(entry["resourceClaimName"],
                                                                        entry["resourceClaimName"])
        created = create(self.admin, body)
        if placeholder:
            self.built.uids[placeholder] = created["metadata"]["uid"]
        if terminating:
            self.admin.wait_pod(self.built.namespace, _meta(body)["name"], timeout=90)

    def claim(self, obj: dict[str, Any], row: Row) -> None:
        owner = _generated_by_controller(obj, row)
        if owner is not None:
            self._generated(obj, owner)
            return
        body = copy.deepcopy(obj)
        _meta(body)["namespace"] = self.built.namespace
        for key in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            _meta(body).pop(key, None)
        for ref in _meta(body).get("ownerReferences") or []:
            ref["uid"] = self.built.uids.get(ref["uid"], ref["uid"])
        if _meta(body).get("ownerReferences") or "deletionTimestamp" in obj["metadata"]:
            _meta(body)["finalizers"] = [*(_meta(body).get("finalizers") or []), HOLD]
            self.built.held.append(_meta(body)["name"])
        creator = self.scheduler if _named_by_status(obj, row) else self.admin
        create(creator, body)
        self.built.claim_names[_meta(obj)["name"]] = _meta(body)["name"]

    def _generated(self, claim: dict[str, Any], owner: dict[str, Any]) -> None:
        """Wait for the controller's claim, and hold it: once its pod is done the controller deletes it."""
        name, entry = _meta(owner)["name"], _meta(claim)["annotations"][POD_CLAIM_ANNOTATION]

        def generated() -> str | None:
            stored = self.admin.get("v1", "Pod", name, self.built.namespace) or {}
            statuses = (stored.get("status") or {}).get("resourceClaimStatuses") or []
            return next((s.get("resourceClaimName") for s in statuses if s["name"] == entry), None)
        real = eventually(generated, 60, message=f"the claim generated for pod {name}")
        self.admin.resource("resource.k8s.io/v1", "ResourceClaim").patch(
            name=real, namespace=self.built.namespace, body={"metadata": {"finalizers": [HOLD]}},
            content_type="application/merge-patch+json")
        self.built.held.append(real)
        self.built.claim_names[_meta(claim)["name"]] = real

    def status(self, obj: dict[str, Any]) -> None:
        status = copy.deepcopy(obj.get("status") or {})
        name = _meta(obj)["name"]
        extended = status.pop("extendedResourceClaimStatus", None)
        if extended:  # the scheduler's own write
            extended["resourceClaimName"] = self.built.claim_names[extended["resourceClaimName"]]
            self.scheduler.core.patch_namespaced_pod_status(name, self.built.namespace,
                                                            {"status": {"extendedResourceClaimStatus": extended}})
        if status.get("phase") in ("Succeeded", "Failed"):  # the kubelet's
            self.admin.core.patch_namespaced_pod_status(name, self.built.namespace, {"status": {"phase": status["phase"]}})

    def delete(self, obj: dict[str, Any]) -> None:
        if "deletionTimestamp" not in obj["metadata"]:
            return
        api = "v1" if obj["kind"] == "Pod" else "resource.k8s.io/v1"
        self.admin.delete(api, obj["kind"], self.built.claim_names.get(_meta(obj)["name"], _meta(obj)["name"]),
                          self.built.namespace)


def probe_template(gpus: int) -> str:
    return f"probe-{gpus}"


def probe(namespace: str, gpus: int) -> dict[str, Any]:
    """A pod asking for `gpus` through a claim template: a pod's legacy GPUs would be rewritten to a template that a
    dry run never creates (docs/quota.md, "Claim templates the state does not have yet"), so it would be charged
    nothing."""
    return pod(f"probe-{gpus}", ns=namespace, templates={"gpu": probe_template(gpus)})


def new_namespace(admin: Kube, name: str) -> None:
    admin.create({"apiVersion": "v1", "kind": "Namespace",
                  "metadata": {"name": name, "annotations": {"owner": f"{name}@example.org"}}})
    eventually(lambda: admin.get("v1", "ServiceAccount", "default", name), 30, message=f"{name}/default SA")
    for gpus in range(1, LIMIT + 2):  # a template alone is charged nothing
        create(admin, template(probe_template(gpus), name, device_request(gpus)))


def build(admin: Kube, scheduler: Kube, row: Row, namespace: str) -> Built:
    """The row's objects in `namespace` (made by new_namespace), their statuses, then their deletions."""
    built = Built(namespace)
    builder = RowBuilder(admin, scheduler, built)
    for obj in row.objects:
        if obj["kind"] == "Pod":
            builder.pod(obj)
        elif obj["kind"] == "ResourceClaim":
            builder.claim(obj, row)
        else:
            body = copy.deepcopy(obj)
            _meta(body)["namespace"] = namespace
            create(admin, body)
    for obj in row.objects:
        if obj["kind"] == "Pod":
            builder.status(obj)
    for obj in row.objects:
        builder.delete(obj)
    return built


def make_profile_of(admin: Kube, namespace: str) -> None:
    admin.resource("v1", "Namespace").patch(name=namespace, body={"metadata": {"labels": PROFILE_LABELS}},
                                            content_type="application/merge-patch+json")


def admitted(admin: Kube, namespace: str, gpus: int) -> tuple[bool, str]:
    try:
        admin.create(probe(namespace, gpus), dry_run="All")
        return True, ""
    except ApiException as error:
        assert error.status == 403, error.body
        return False, error.body or ""


def release(admin: Kube, built: Built) -> None:
    for name in built.terminating:
        admin.delete("v1", "Pod", name, built.namespace, grace_period_seconds=0)
    for name in built.held:
        try:
            admin.resource("resource.k8s.io/v1", "ResourceClaim").patch(
                name=name, namespace=built.namespace, body={"metadata": {"finalizers": None}},
                content_type="application/merge-patch+json")
        except ApiException as error:
            if error.status != 404:
                raise
    admin.delete("v1", "Namespace", built.namespace)


@pytest.fixture(scope="module")
def table(admin: Kube, quartermaster: Installation, control_plane: ClusterRecord,
          qmcluster_binary: Path) -> Iterator[dict[str, Built]]:
    """Every row built in its own namespace, then all made team profiles at once, then a witness: a profile whose
    pod and claim were written after every row's objects. Each kind is watched cluster-wide, so once both replicas
    count the witness's pod and claim, their informers hold every row's objects and statuses."""
    scheduler = impersonating(admin, qmcluster_binary, SCHEDULER)
    built: dict[str, Built] = {}
    try:
        for index, row in enumerate(TABLE_ROWS):
            built[row.name] = Built(f"bypass-{index:02d}")  # released even if building it fails
            new_namespace(admin, built[row.name].namespace)
            built[row.name] = build(admin, scheduler, row, built[row.name].namespace)
        witness = Row("witness", (pod("witness", gpus=4), claim("witness", "jdoe", device_request(4))), 8)
        built["witness"] = Built("bypass-witness")
        new_namespace(admin, "bypass-witness")
        built["witness"] = build(admin, scheduler, witness, "bypass-witness")
        for b in built.values():
            make_profile_of(admin, b.namespace)
        eventually(lambda: all(not admitted(admin, "bypass-witness", 1)[0] for _ in range(4)), 60, interval=0.5,
                   message="both replicas counting the witness profile's pod and claim")
        yield built
    finally:
        for b in built.values():
            release(admin, b)


def charge_errors(admin: Kube, namespace: str, row: Row) -> list[str]:
    wrong = []
    for gpus, expected in expected_admissions(row):
        outcome, message = admitted(admin, namespace, gpus)
        if outcome is not expected:
            wrong.append(f"a {gpus}-GPU probe was {'admitted' if outcome else 'refused'} {message}")
    return wrong


def assert_charged_as_documented(admin: Kube, namespace: str, row: Row) -> None:
    """Until the probes agree with the row's charge: the replicas may still be applying a write made just before,
    and a charge that settles wrong fails, naming what the probes saw."""
    errors: list[str] = []

    def settled() -> bool:
        errors[:] = charge_errors(admin, namespace, row)
        return not errors
    try:
        eventually(settled, 20, interval=0.5, message=row.name)
    except AssertionError:
        pytest.fail(f"{row.name}: charged {row.charge} in docs/quota.md, but {errors}")


@pytest.mark.parametrize("row", TABLE_ROWS, ids=[row.name for row in TABLE_ROWS])
def test_row_is_charged_as_documented(admin: Kube, table: dict[str, Built], row: Row) -> None:
    assert_charged_as_documented(admin, table[row.name].namespace, row)


def test_a_pod_whose_claim_is_not_generated_yet_is_charged_its_template(
        admin: Kube, quartermaster: Installation, control_plane: ClusterRecord, qmcluster_binary: Path) -> None:
    """The controller manager down (an outage, an upgrade): the pod waits for its claim and is charged its template."""
    row = next(row for row in ROWS if row.name == UNGENERATED)
    built = Built("bypass-ungenerated")
    new_namespace(admin, built.namespace)  # its default ServiceAccount comes from the controller manager
    record = ClusterRecord.read(Path(control_plane.directory))
    stop_component(record, "kube-controller-manager")
    try:
        built = build(admin, impersonating(admin, qmcluster_binary, SCHEDULER), row, built.namespace)
        make_profile_of(admin, built.namespace)
        assert_charged_as_documented(admin, built.namespace, row)
        assert admin.list("resource.k8s.io/v1", "ResourceClaim", built.namespace) == [], "the state the row names"
    finally:
        start_component(record, "kube-controller-manager")
        release(admin, built)



def test_the_schedulers_claim_is_charged_once_before_the_pod_status_names_it(
        admin: Kube, quartermaster: Installation, qmcluster_binary: Path) -> None:
    """The table's KEP-5004 rows write the pod's status; between the scheduler's CREATE of the claim and that write,
    only the review's userInfo (as the API server sends it) tells the scheduler's claim from the tenant's."""
    row = next(row for row in ROWS if row.name.startswith("KEP-5004 extended-resource claim of a running pod"))
    legacy, scheduler_claim = row.objects
    built = Built("bypass-scheduler-create")
    new_namespace(admin, built.namespace)
    try:
        builder = RowBuilder(admin, impersonating(admin, qmcluster_binary, SCHEDULER), built)
        builder.pod(legacy)  # before the namespace is a profile, which the DRA rewrite would change it in
        make_profile_of(admin, built.namespace)
        assert_charged_as_documented(admin, built.namespace, Row("the pod", (), 2))
        builder.claim(scheduler_claim, row)  # by the scheduler, admitted: the status is never written here
        # a tenant's 1-GPU claim after it: once the replicas count that one, they have seen the scheduler's
        create(admin, claim("later", built.namespace, device_request(1)))
        assert_charged_as_documented(admin, built.namespace, Row("the pod, its claim, a later claim", (), 3))
    finally:
        release(admin, built)
