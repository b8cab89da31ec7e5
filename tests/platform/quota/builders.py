"""Kubernetes objects for the quota tests; every builder's output passes kubernetes-validate (strict 1.34)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from webhook.app import Quartermaster, Settings
from webhook.cel import CelCompiler
from webhook.model.review import AdmissionRequest, parse_review
from webhook.model.cluster import never_expires
from webhook.platform import platform_family
from webhook.policy.documents import Document
from webhook.platform.quota.policy import ProfileQuotaPolicy, compile_quota
from webhook.policy.family import CompileEnv, FamilyRegistry
from webhook.policy.perdocument import PerDocumentFamily, PolicyHeader
from webhook.reports.sink import MemoryResultSink
from webhook.state.ledger import ReservationLedgers
from webhook.state.memory import InMemoryClusterState
from tests.kinds import REQUIRE_LABEL
from tests.support import REPO, load_yaml, review

DEFAULT_POLICY = REPO / "policies" / "profile-quota.yaml"


def namespace(name: str, profile_class: str | None = None, profile: bool = True) -> dict[str, Any]:
    labels = {"kubernetes.io/metadata.name": name}
    if profile:
        labels["app.kubernetes.io/part-of"] = "kubeflow-profile"
    if profile_class:
        labels["quartermaster.dev/profile-class"] = profile_class
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": labels, "annotations": {"owner": f"{name}@example.org"}}}


def kf_profile(name: str, hard: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "kubeflow.org/v1", "kind": "Profile", "metadata": {"name": name},
            "spec": {"owner": {"kind": "User", "name": f"{name}@example.org"}, "resourceQuotaSpec": {"hard": hard}}}


def container(name: str = "main", gpus: int = 0, resource: str = "nvidia.com/gpu", claims: list[str] | None = None,
              restart_always: bool = False) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": "python:3.12"}
    resources: dict[str, Any] = {}
    if gpus:
        resources["limits"] = {resource: str(gpus)}
    if claims:
        resources["claims"] = [{"name": n} for n in claims]
    if resources:
        c["resources"] = resources
    if restart_always:
        c["restartPolicy"] = "Always"
    return c


def pod(name: str, ns: str = "jdoe", gpus: int = 0, resource: str = "nvidia.com/gpu", *, templates: dict[str, str] | None = None,
        claims: dict[str, str] | None = None, init: list[dict[str, Any]] | None = None,
        containers: list[dict[str, Any]] | None = None, ephemeral: dict[str, str] | None = None,
        phase: str | None = None, labels: dict[str, str] | None = None, uid: str | None = None) -> dict[str, Any]:
    """templates/claims: pod claim name -> ResourceClaimTemplate / ResourceClaim name; ephemeral: volume -> size."""
    refs = [{"name": k, "resourceClaimTemplateName": v} for k, v in (templates or {}).items()]
    refs += [{"name": k, "resourceClaimName": v} for k, v in (claims or {}).items()]
    main = container(gpus=gpus, resource=resource, claims=[r["name"] for r in refs])
    spec: dict[str, Any] = {"containers": containers or [main]}
    if refs:
        spec["resourceClaims"] = refs
    if init:
        spec["initContainers"] = init
    if ephemeral:
        spec["volumes"] = [{"name": vol, "ephemeral": {"volumeClaimTemplate": {"spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}}}} for vol, size in ephemeral.items()]
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec}
    if labels:
        obj["metadata"]["labels"] = labels
    if uid:
        obj["metadata"]["uid"] = uid
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def owner(pod_obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"apiVersion": "v1", "kind": "Pod", "name": pod_obj["metadata"]["name"],
             "uid": pod_obj["metadata"].get("uid", "00000000-0000-0000-0000-000000000000"),
             "controller": True, "blockOwnerDeletion": True}]


def pvc(name: str, ns: str = "jdoe", size: str = "10Gi", storage_class: str | None = None,
        allocated: str | None = None, owner_pod: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": ns},
                           "spec": spec}
    if allocated:
        obj["status"] = {"allocatedResources": {"storage": allocated}}
    if owner_pod:
        obj["metadata"]["ownerReferences"] = owner(owner_pod)
    return obj


def device_request(count: int | None = 1, device_class: str = "gpu.nvidia.com", mode: str | None = None,
                   name: str = "gpu") -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": device_class}
    if mode:
        exactly["allocationMode"] = mode
    if count is not None and mode != "All":
        exactly["count"] = count
    return {"name": name, "exactly": exactly}


def first_available(*alternatives: dict[str, Any], name: str = "gpu") -> dict[str, Any]:
    return {"name": name, "firstAvailable": [{"name": f"alt{i}", **alt["exactly"]} for i, alt in enumerate(alternatives)]}


def claim_spec(*requests: dict[str, Any]) -> dict[str, Any]:
    return {"devices": {"requests": list(requests or [device_request()])}}


def claim(name: str, ns: str = "jdoe", *requests: dict[str, Any], owner_pod: dict[str, Any] | None = None,
          pod_claim: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                           "metadata": {"name": name, "namespace": ns}, "spec": claim_spec(*requests)}
    if owner_pod:
        obj["metadata"]["ownerReferences"] = owner(owner_pod)
    if pod_claim:
        obj["metadata"]["annotations"] = {"resource.kubernetes.io/pod-claim-name": pod_claim}
    return obj


def template(name: str, ns: str = "jdoe", *requests: dict[str, Any], created: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                           "metadata": {"name": name, "namespace": ns,
                                        "labels": {"app.kubernetes.io/managed-by": "quartermaster"}},
                           "spec": {"spec": claim_spec(*requests)}}
    if created:
        obj["metadata"]["creationTimestamp"] = created
    return obj


# --- running the policy ----------------------------------------------------------------------------
def policy_doc(name: str = "profile-quota", **spec: Any) -> dict[str, Any]:
    """The default policy document with some spec fields replaced."""
    doc = copy.deepcopy(load_yaml(DEFAULT_POLICY)[0])
    doc["metadata"]["name"] = name
    doc["spec"].update(spec)
    return doc


def policy_text(name: str = "profile-quota", **spec: Any) -> str:
    return yaml.safe_dump(policy_doc(name, **spec), sort_keys=False)


def compiled(ledgers: ReservationLedgers | None = None, **spec: Any) -> ProfileQuotaPolicy:
    """One compiled policy; policies given the same `ledgers` share their reservations (as across a reload)."""
    doc = policy_doc(**spec)
    header = PolicyHeader.of(Document("test.yaml", 0, doc, None))
    return compile_quota(doc, header, CompileEnv(CelCompiler()), ledgers or ReservationLedgers())


def registry(ledgers: ReservationLedgers) -> FamilyRegistry:
    """The batteries and the test kind RequireLabel (for a second validating policy)."""
    return FamilyRegistry([platform_family(ledgers), PerDocumentFamily("test", [REQUIRE_LABEL])])


def _seed(objects: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    base = [namespace("jdoe"), namespace("ml-team", "team"), namespace("alice"), namespace("default", profile=False)]
    return base + list(objects)


def seeded_state(*objects: dict[str, Any]) -> InMemoryClusterState:
    return InMemoryClusterState(_seed(objects))


def build(tmp_path: Path, *texts: str, state: InMemoryClusterState | None = None) -> Quartermaster:
    directory = tmp_path / "policies"
    directory.mkdir(parents=True, exist_ok=True)
    for index, text in enumerate(texts or (policy_text(),)):
        (directory / f"{index}.yaml").write_text(text)
    ledgers = ReservationLedgers()
    qm = Quartermaster.build(Settings(policies=directory), state=state or seeded_state(), registry=registry(ledgers),
                             ledgers=ledgers, sink=MemoryResultSink())
    qm.load_policies()
    return qm


def request(obj: dict[str, Any] | None, **kw: Any) -> AdmissionRequest:
    return parse_review(json.dumps(review(obj, **kw)).encode())


class NotifiedLate(InMemoryClusterState):
    """A state whose listeners hear of a change a moment after its reads show it, as live mode's informer thread
    puts an object into its cache and then calls the listeners: a decision on the event loop can run in between.
    A double, because the real informer opens that window only by chance of thread scheduling; `late` holds the
    events back until `flush`."""

    def __init__(self, objects: Any = ()) -> None:
        super().__init__(objects)
        self.late = False
        self.held: list[tuple[Any, str, str, Any]] = []

    def add_listener(self, hook: Any, expired: Any = never_expires) -> bool:
        def gated(kind: str, event: str, obj: Any) -> None:
            if self.late:
                self.held.append((hook, kind, event, obj))
            else:
                hook(kind, event, obj)
        return super().add_listener(gated, expired)

    def flush(self) -> None:
        self.late, held, self.held = False, self.held, []
        for hook, kind, event, obj in held:
            hook(kind, event, obj)


def lagging_state(*objects: dict[str, Any]) -> NotifiedLate:
    return NotifiedLate(_seed(objects))
