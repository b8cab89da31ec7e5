"""What each object of a profile is charged, in GPUs and storage.

The counting model (docs/quota.md has it as a table):
- a Pod that is not terminal is charged its legacy GPUs (effective requests) and the devices of the
  claim templates it references whose claim Kubernetes has not generated yet (a template itself is
  not charged, so creating one that pending pods already reference charges them, and is checked);
  its generic ephemeral volumes are charged until their PVC exists;
- a ResourceClaim is charged what it can allocate (its devices) from creation to deletion, once however
  many pods share it, whatever its ownerReferences say. The one exception: a claim the resourceclaim
  controller generated for a pod the state knows (annotation resource.kubernetes.io/pod-claim-name naming
  one of that pod's template entries, controller ownerReference v1 Pod with the stored pod's uid) is
  free once that pod is terminal and no other running pod uses it. A claim the scheduler made for a pod's
  legacy extended resources (KEP-5004, same ownership checks, and made by the scheduler: extended.py) is
  charged only what it holds beyond the GPUs its pod is charged for those resources, class by class;
- a PersistentVolumeClaim of a counted storage class is charged its request (or what was already
  allocated to it, if larger, so shrinking the request after an expansion frees nothing).
"""

from __future__ import annotations

from dataclasses import field
from functools import cached_property
from fractions import Fraction
from typing import Any, Mapping

from webhook.model.cluster import POD, PVC, RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE
from webhook.model.quickinit import frozen_dataclass
from webhook.platform.quota.devices import ZERO, GpuAmount, claim_spec_gpus, legacy_gpus, quantity_or_zero
from webhook.platform.quota.extended import covered_gpus, made_by_scheduler, marked_extended
from webhook.platform.quota.objects import ObjectsView, ProfileObjects
from webhook.platform.quota.settings import CountingRules
from webhook.platform.base import is_mapping

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
# pod_charge reads a pod's own uid only to tell whether an object it found belongs to that very pod
# (`_owned_by`): a claim generated from one of its templates, the PVC of one of its ephemeral volumes. When it
# found no object of these kinds, its charge is the same whatever the uid: totals.py relies on that to reuse
# the charge of an admitted pod once the state stores it with a uid. Keep in step with pod_charge.
POD_UID_READ_FOR = frozenset({RESOURCE_CLAIM, PVC})
LEGACY_MEMO_LIMIT = 50_000
TEMPLATE_MEMO_LIMIT = 4_096  # each entry holds its template alive until the memo is cleared
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"  # set by the resourceclaim controller


@frozen_dataclass(dict_init=True)
class Charge:
    kind: str
    name: str
    gpus: Fraction = ZERO
    unbounded: bool = False
    storage: Fraction = ZERO
    notes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name}"


@frozen_dataclass
class Usage:
    charges: Mapping[tuple[str, str], Charge]

    # totals are read several times per decision; Fraction additions dominate a large profile's cost
    @cached_property
    def gpus(self) -> Fraction:
        return sum((c.gpus for c in self.charges.values() if c.gpus), ZERO)

    @property
    def unbounded(self) -> tuple[Charge, ...]:
        return tuple(c for c in self.charges.values() if c.unbounded)

    @cached_property
    def storage(self) -> Fraction:
        return sum((c.storage for c in self.charges.values() if c.storage), ZERO)

    def charge(self, kind: str, name: str) -> Charge:
        found = self.charges.get((kind, name))  # the empty charge only when there is none (a default is built first)
        return Charge(kind, name) if found is None else found


def _meta(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (obj or {}).get("metadata") or {}


def controller_pod(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in _meta(obj).get("ownerReferences") or []:
        if is_mapping(ref) and ref.get("kind") == "Pod" and ref.get("controller"):
            return ref
    return None


def _owned_by(obj: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Owned by exactly this pod: a core v1 Pod reference with the stored pod's uid (a name is not enough:
    anyone can write an ownerReference naming any pod)."""
    ref = controller_pod(obj)
    if ref is None or ref.get("apiVersion") != "v1" or ref.get("name") != _meta(pod).get("name"):
        return False
    uid = _meta(pod).get("uid")
    return bool(uid) and ref.get("uid") == uid


def _template_entries(pod: Mapping[str, Any]) -> set[str]:
    """The pod's own resourceClaims entries that name a claim template."""
    entries = (pod.get("spec") or {}).get("resourceClaims") or []
    return {str(e.get("name")) for e in entries if is_mapping(e) and e.get("resourceClaimTemplateName")}


def generated_for(objects: ObjectsView, claim: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The stored pod the resourceclaim controller generated this claim for, or None: the claim is then the
    user's own, whatever its ownerReferences and annotations say."""
    ref = controller_pod(claim)
    pod_claim = (_meta(claim).get("annotations") or {}).get(POD_CLAIM_ANNOTATION)
    if ref is None or not pod_claim:
        return None
    pod = objects.get(POD, str(ref.get("name", "")))
    if pod is None or not _owned_by(claim, pod) or str(pod_claim) not in _template_entries(pod):
        return None
    return pod


def _uses_claim(pod: Mapping[str, Any], claim_name: str) -> bool:
    for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
        if is_mapping(entry) and entry.get("resourceClaimName") == claim_name:
            return True
    statuses = (pod.get("status") or {}).get("resourceClaimStatuses") or []
    return any(is_mapping(s) and s.get("resourceClaimName") == claim_name for s in statuses)


def terminal(pod: Mapping[str, Any] | None) -> bool:
    return pod is not None and ((pod.get("status") or {}).get("phase") in TERMINAL_PHASES)


# --- pods ------------------------------------------------------------------------------------------
def generated_key(claim: Mapping[str, Any]) -> tuple[str, str] | None:
    """(pod name, pod claim name) that a claim says the resourceclaim controller generated it for; whether
    the pod agrees (`generated_for`) is checked where it is used (`_claim_generated`: `_owned_by` the pod
    being charged, for one of its own template entries). Incremental totals index claims by it."""
    ref = controller_pod(claim)
    pod_claim = (_meta(claim).get("annotations") or {}).get(POD_CLAIM_ANNOTATION)
    return (str(ref.get("name", "")), str(pod_claim)) if ref is not None and pod_claim else None


def generated_claims(objects: ObjectsView) -> dict[tuple[str, str], list[Mapping[str, Any]]]:
    """Claims the resourceclaim controller made from pods' templates, by (pod name, pod claim name)."""
    index: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for claim in objects.of(RESOURCE_CLAIM).values():
        pod = generated_for(objects, claim)
        if pod is not None:
            pod_claim = str((_meta(claim).get("annotations") or {}).get(POD_CLAIM_ANNOTATION))
            index.setdefault((str(_meta(pod).get("name", "")), pod_claim), []).append(claim)
    return index


def _claim_generated(objects: ObjectsView, generated: Mapping[tuple[str, str], list[Mapping[str, Any]]],
                     pod: Mapping[str, Any], pod_claim: str) -> bool:
    """Has Kubernetes created this pod's claim from its template? Then the claim is charged instead."""
    # the pod's status is written by the resourceclaim controller (users cannot set it): the claim it names
    # is the one the pod uses, and that claim is charged by its own devices while the pod runs
    for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
        if is_mapping(status) and status.get("name") == pod_claim \
                and str(status.get("resourceClaimName")) in objects.of(RESOURCE_CLAIM):
            return True
    candidates = generated.get((str(_meta(pod).get("name", "")), pod_claim), ())
    return any(_owned_by(claim, pod) for claim in candidates)


def _template_gpus(objects: ObjectsView, template_name: str, rules: CountingRules, notes: list[str]) -> GpuAmount:
    template = objects.get(RESOURCE_CLAIM_TEMPLATE, template_name)
    if template is None:
        # checked later: creating the template (or the claim from it) is validated like any other write
        notes.append(f"claim template {template_name} not found: its GPUs count once it exists")
        return GpuAmount()
    memo = rules.template_memo
    entry = memo.get(id(template))
    if entry is not None and entry[0] is template:
        return entry[1]  # type: ignore[no-any-return]
    amount = claim_spec_gpus((template.get("spec") or {}).get("spec"), rules.device_classes)
    if len(memo) >= TEMPLATE_MEMO_LIMIT:
        memo.clear()  # crude but bounded; entries are cheap to recompute
    memo[id(template)] = (template, amount)
    return amount


def _ephemeral_storage(objects: ObjectsView, pod: Mapping[str, Any], rules: CountingRules) -> Fraction:
    total = ZERO
    pod_name = str(_meta(pod).get("name", ""))
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        ephemeral = volume.get("ephemeral") if is_mapping(volume) else None
        if not ephemeral:  # most volumes (emptyDir, a PVC, a secret): nothing to look up
            continue
        template = ephemeral.get("volumeClaimTemplate")
        if not is_mapping(template):
            continue
        existing = objects.get(PVC, f"{pod_name}-{volume.get('name')}")  # the name Kubernetes gives the PVC
        if existing is not None and _owned_by(existing, pod):
            continue  # charged as a PVC
        total += pvc_spec_storage(template.get("spec") or {}, None, rules)
    return total


def _legacy_gpus(pod: Mapping[str, Any], rules: CountingRules) -> Fraction:
    meta = _meta(pod)
    key = (str(meta.get("uid") or ""), str(meta.get("resourceVersion") or ""))
    if not key[0] or not key[1]:  # the request's own object: not stored yet
        return legacy_gpus(pod.get("spec") or {}, rules.legacy)
    memo = rules.legacy_memo
    gpus = memo.get(key)
    if gpus is None:
        if len(memo) >= LEGACY_MEMO_LIMIT:
            memo.clear()  # crude but bounded; entries are cheap to recompute
        gpus = memo[key] = legacy_gpus(pod.get("spec") or {}, rules.legacy)
    return gpus


def pod_charge(objects: ObjectsView, name: str, pod: Mapping[str, Any], rules: CountingRules,
               generated: Mapping[tuple[str, str], list[Mapping[str, Any]]] | None = None) -> Charge:
    if terminal(pod):
        return Charge(POD, name)  # its GPUs are free; a generated PVC that still exists is charged as a PVC
    spec = pod.get("spec") or {}
    notes: list[str] = []
    generated = generated_claims(objects) if generated is None else generated
    # GpuAmount's sum, kept as its two parts: no intermediate amount per entry (a pod has one or two)
    gpus, unbounded = _legacy_gpus(pod, rules), False
    for entry in spec.get("resourceClaims") or []:
        template_name = entry.get("resourceClaimTemplateName") if is_mapping(entry) else None
        if template_name and not _claim_generated(objects, generated, pod, str(entry.get("name", ""))):
            amount = _template_gpus(objects, str(template_name), rules, notes)
            if amount.gpus:
                gpus = gpus + amount.gpus if gpus else amount.gpus
            unbounded = unbounded or amount.unbounded
        # a resourceClaimName is charged as that ResourceClaim, once for every pod that shares it
    storage = _ephemeral_storage(objects, pod, rules) if rules.ephemeral_volumes else ZERO
    return Charge(POD, name, gpus, unbounded, storage, tuple(notes))


# --- claims and volumes ----------------------------------------------------------------------------
def _extended_resource_pod(objects: ObjectsView, claim: Mapping[str, Any], rules: CountingRules) -> Mapping[str, Any] | None:
    """KEP-5004: the stored pod the scheduler made this claim for (its legacy extended resources), or None."""
    if not marked_extended(claim):
        return None
    ref = controller_pod(claim)
    pod = objects.get(POD, str(ref.get("name", ""))) if ref is not None else None
    if pod is None or not _owned_by(claim, pod) or not made_by_scheduler(pod, claim, rules):
        return None
    return pod


def claim_charge(objects: ObjectsView, name: str, claim: Mapping[str, Any], rules: CountingRules) -> Charge:
    extended = _extended_resource_pod(objects, claim, rules)
    owner = generated_for(objects, claim) or extended
    used_by_others = owner is not None and any(
        _uses_claim(pod, name) for pod in objects.of(POD).values() if pod is not owner and not terminal(pod))
    if owner is not None and terminal(owner) and not used_by_others:
        return Charge(RESOURCE_CLAIM, name)  # the controller deletes it; its devices are free already
    amount = claim_spec_gpus(claim.get("spec"), rules.device_classes)
    if extended is not None and owner is extended and not used_by_others:
        # the same GPUs as the pod's legacy limits, which the pod is charged: only what the claim holds beyond
        # them is charged here, so a claim that merely looks like the scheduler's can never hide devices
        covered = covered_gpus(extended, claim, rules)
        return Charge(RESOURCE_CLAIM, name, max(ZERO, amount.gpus - covered), amount.unbounded,
                      notes=(f"the extended resources of pod {_meta(extended).get('name')}, charged to the pod",))
    return Charge(RESOURCE_CLAIM, name, amount.gpus, amount.unbounded)


def pvc_spec_storage(spec: Mapping[str, Any], status: Mapping[str, Any] | None, rules: CountingRules) -> Fraction:
    storage_class = spec["storageClassName"] if "storageClassName" in spec else rules.default_storage_class
    if not rules.counts_storage_class(storage_class):
        return ZERO
    requested = quantity_or_zero(((spec.get("resources") or {}).get("requests") or {}).get("storage", 0))
    allocated = quantity_or_zero(((status or {}).get("allocatedResources") or {}).get("storage", 0))
    return max(requested, allocated)


def pvc_charge(name: str, pvc: Mapping[str, Any], rules: CountingRules) -> Charge:
    if not rules.ephemeral_volumes and controller_pod(pvc) is not None:
        return Charge(PVC, name)  # a generic ephemeral volume, and the policy does not count those
    return Charge(PVC, name, storage=pvc_spec_storage(pvc.get("spec") or {}, pvc.get("status"), rules))


def measure(objects: ProfileObjects, rules: CountingRules) -> Usage:
    charges: dict[tuple[str, str], Charge] = {}
    generated = generated_claims(objects)
    for name, pod in objects.of(POD).items():
        charges[(POD, name)] = pod_charge(objects, name, pod, rules, generated)
    for name, claim in objects.of(RESOURCE_CLAIM).items():
        charges[(RESOURCE_CLAIM, name)] = claim_charge(objects, name, claim, rules)
    for name, pvc in objects.of(PVC).items():
        charges[(PVC, name)] = pvc_charge(name, pvc, rules)
    return Usage(charges)
