"""KEP-5004 (DRAExtendedResource): the claim the scheduler makes for a pod's legacy extended resources.

Such a claim holds the devices of the pod's `nvidia.com/gpu` (or any resource a DeviceClass serves),
which the pod is charged already, so the claim is charged only what it holds beyond them. Everything a
tenant writes is not proof that the scheduler made it (the annotation, the ownerReference): the
deduction needs the pod's `status.extendedResourceClaimStatus.resourceClaimName` naming the claim
(written by the scheduler), or, before the scheduler wrote it, the scheduler's own CREATE of the claim
(state.claim_authors). And it covers only the legacy resources that map to the claim's device classes,
class by class, never more than the pod is charged for them.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Mapping

from webhook.platform.base import is_mapping
from webhook.platform.quota.devices import ZERO, claim_spec_gpus, effective_requests
from webhook.platform.quota.settings import CountingRules

EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"


def _meta(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (obj or {}).get("metadata") or {}


def marked_extended(claim: Mapping[str, Any]) -> bool:
    """The claim says it is the scheduler's (anyone can say so)."""
    return str((_meta(claim).get("annotations") or {}).get(EXTENDED_RESOURCE_CLAIM_ANNOTATION, "")).lower() == "true"


def status_claim_name(pod: Mapping[str, Any]) -> str:
    """The claim the scheduler named in the pod's status, "" while it named none."""
    status = (pod.get("status") or {}).get("extendedResourceClaimStatus")
    return str(status.get("resourceClaimName") or "") if is_mapping(status) else ""


def made_by_scheduler(pod: Mapping[str, Any], claim: Mapping[str, Any], rules: CountingRules) -> bool:
    """Is `claim` (owned by `pod`, checked by the caller) the one the scheduler made for it? One claim per pod."""
    meta = _meta(claim)
    name = str(meta.get("name", ""))
    named = status_claim_name(pod)
    if named:
        return named == name
    return rules.scheduler_claims.created_by_scheduler(str(meta.get("namespace", "")), name, str(meta.get("uid") or ""))


def _claim_gpus_by_class(spec: Mapping[str, Any] | None, rules: CountingRules) -> dict[str, Fraction]:
    """The claim's GPUs per device class, of requests for exactly one class (the scheduler writes no others)."""
    out: dict[str, Fraction] = {}
    for request in ((spec or {}).get("devices") or {}).get("requests") or ():
        if not is_mapping(request) or request.get("firstAvailable"):
            continue
        exactly = request.get("exactly")
        device_class = str((exactly if is_mapping(exactly) else request).get("deviceClassName", ""))
        amount = claim_spec_gpus({"devices": {"requests": [request]}}, rules.device_classes)
        if amount.gpus and not amount.unbounded:
            out[device_class] = out.get(device_class, ZERO) + amount.gpus
    return out


def _pod_gpus_by_class(pod: Mapping[str, Any], rules: CountingRules) -> dict[str, Fraction]:
    """The pod's legacy GPUs (as charged to it) per device class their resource maps to."""
    out: dict[str, Fraction] = {}
    for name, amount in effective_requests(pod.get("spec") or {}, rules.legacy).items():
        device_class = rules.legacy.device_class(name)
        weight = rules.legacy.weight(name)
        if device_class is not None and weight and amount:
            out[device_class] = out.get(device_class, ZERO) + amount * weight
    return out


def covered_gpus(pod: Mapping[str, Any], claim: Mapping[str, Any], rules: CountingRules) -> Fraction:
    """The claim's GPUs that are the pod's legacy GPUs, class by class."""
    held = _claim_gpus_by_class(claim.get("spec"), rules)
    if not held:
        return ZERO
    charged = _pod_gpus_by_class(pod, rules)
    return sum((min(gpus, charged.get(device_class, ZERO)) for device_class, gpus in held.items()), ZERO)
