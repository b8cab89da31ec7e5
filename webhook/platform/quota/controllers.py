"""Early feedback for controllers: a Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob or
Kubeflow Notebook whose pod template can never fit the profile's quota is refused (Enforce) or warned
about (Audit) when the controller object is written, as Kyverno's autogen rules do; otherwise the
failure surfaces later, only as FailedCreate events on the controller.

"Can never fit" means one pod of the template asks for more than the profile's whole limit (GPUs,
allocationMode: All, or storage: generic ephemeral volumes plus a StatefulSet's volumeClaimTemplates
per replica). Whether the pods fit next to what is in use is decided when each pod is created.
Nothing is charged or reserved for the controller itself.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Mapping

from webhook.model.cluster import POD
from webhook.model.quantity import format_bytes, format_count
from webhook.model.quickinit import frozen_dataclass
from webhook.platform.quota.check import GPU_RULE, STORAGE_RULE, RuleOutcome, gpus_text
from webhook.platform.quota.limits import ProfileLimits
from webhook.platform.quota.objects import ProfileObjects
from webhook.platform.quota.settings import QuotaSettings
from webhook.platform.quota.usage import measure, pvc_spec_storage

# where each controller kind keeps its pod template
TEMPLATE_PATHS: Mapping[str, tuple[str, ...]] = {
    "Deployment": ("spec", "template"), "StatefulSet": ("spec", "template"), "ReplicaSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"), "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"), "Notebook": ("spec", "template"),
}
CONTROLLER_KINDS = frozenset(TEMPLATE_PATHS)


def pod_template(kind: str, obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    node: Any = obj
    for step in TEMPLATE_PATHS[kind]:
        node = node.get(step) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else None


@frozen_dataclass
class TemplateAsk:
    """What one pod of the template asks for on its own."""

    gpus: Fraction
    unbounded: bool
    storage: Fraction


def template_ask(settings: QuotaSettings, view: ProfileObjects, kind: str, name: str, obj: Mapping[str, Any]) -> TemplateAsk:
    template = pod_template(kind, obj) or {}
    pod_name = f"{name}-<pod template>"
    pod = {"apiVersion": "v1", "kind": POD, "spec": template.get("spec") or {},
           "metadata": {**dict(template.get("metadata") or {}), "name": pod_name, "namespace": view.namespace}}
    base, with_pod = measure(view, settings.rules), measure(view.with_object(POD, pod_name, pod), settings.rules)
    storage = with_pod.storage - base.storage
    if kind == "StatefulSet":  # each replica gets its own PVC from every volumeClaimTemplate
        for claim in (obj.get("spec") or {}).get("volumeClaimTemplates") or []:
            if isinstance(claim, Mapping):
                storage += pvc_spec_storage(claim.get("spec") or {}, None, settings.rules)
    return TemplateAsk(with_pod.gpus - base.gpus, len(with_pod.unbounded) > len(base.unbounded), storage)


def judge_controller(settings: QuotaSettings, limits: ProfileLimits, view: ProfileObjects, kind: str, name: str,
                     obj: Mapping[str, Any]) -> tuple[RuleOutcome, ...]:
    """Pure, like check.decide: may run in a worker thread."""
    ask = template_ask(settings, view, kind, name, obj)
    ns, what, outcomes = limits.namespace, f"{kind} {name}", []
    if limits.gpus.amount is not None:
        cap = limits.gpus.amount
        if ask.unbounded or ask.gpus > cap:
            asks = "every matching device (allocationMode: All)" if ask.unbounded else gpus_text(ask.gpus)
            outcomes.append(RuleOutcome(
                GPU_RULE, True,
                f"each pod of {what} asks for {asks}, more than profile {ns!r} may use at all (limit {gpus_text(cap)}, "
                f"{limits.gpus.origin}): none of its pods could ever start. Ask for at most {gpus_text(cap)} per pod, "
                "or ask the platform team to raise the limit.",
                f"pods of {what} can never fit the GPU quota of {ns!r} ({format_count(ask.gpus)} > {format_count(cap)})"))
        else:
            outcomes.append(RuleOutcome(GPU_RULE, False, f"each pod of {what} asks for {gpus_text(ask.gpus)}, within the "
                                                         f"limit of {gpus_text(cap)} ({limits.gpus.origin})"))
    if limits.storage.amount is not None:
        cap_bytes = limits.storage.amount
        if ask.storage > cap_bytes:
            outcomes.append(RuleOutcome(
                STORAGE_RULE, True,
                f"each pod of {what} asks for {format_bytes(ask.storage)} of storage, more than profile {ns!r} may use "
                f"at all (limit {format_bytes(cap_bytes)}, {limits.storage.origin}): none of its pods could ever start. "
                "Ask for less storage per pod, or ask the platform team to raise the limit.",
                f"pods of {what} can never fit the storage quota of {ns!r} "
                f"({format_bytes(ask.storage)} > {format_bytes(cap_bytes)})"))
        else:
            outcomes.append(RuleOutcome(STORAGE_RULE, False, f"each pod of {what} asks for {format_bytes(ask.storage)} "
                                                             f"of storage, within the limit of {format_bytes(cap_bytes)} "
                                                             f"({limits.storage.origin})"))
    return tuple(outcomes)
