"""QueueAssignment (quartermaster.dev/v1alpha1): the mutate-phase battery that puts the pods and jobs
of a Kubeflow profile into the profile's Kueue LocalQueue, by the queue-name label Kueue reads.

Per profile class, a queue name. A workload that already names a queue is the user's choice: kept,
overridden or denied as the class says. Pods owned by a listed workload kind (a Job's pods) are left
alone: Kueue admits the Job, and its pods follow.
Rules it reports: `queue` (assigned, kept, or refused).
"""

from __future__ import annotations

import copy
from dataclasses import field
from typing import Any, Mapping

from webhook.model.errors import PolicyCompileError
from webhook.model.policy import EvalContext, FailurePolicy, MutationOutcome, Phase, PolicyId, SourceRef
from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Action, failed, passed, skipped
from webhook.model.review import AdmissionRequest
from webhook.platform.base import API_VERSION, CLASS_LABEL, DEFAULT_PROFILE_SELECTOR, Battery
from webhook.platform.queue.schema import KIND as KIND_NAME
from webhook.platform.queue.schema import QUEUE_LABEL, SCHEMA
from webhook.policy.common import MatchSpec, action, compile_match, failure_policy
from webhook.policy.family import CompileEnv, PolicyKind
from webhook.policy.perdocument import DocumentKind, PolicyHeader

DEFAULT_WORKLOADS = ({"apiVersion": "v1", "kind": "Pod"}, {"apiVersion": "batch/v1", "kind": "Job", "suspend": True})
LABEL_VALUE_MAX = 63


@frozen_dataclass
class Workload:
    api_version: str
    kind: str
    suspend: bool


@frozen_dataclass
class ClassQueue:
    queue_name: str  # a template: {namespace}, {class}
    user_queue: str  # Keep | Override | Deny
    allowed: frozenset[str]  # with Deny: queues the user may still choose


@frozen_dataclass
class QueueSpec:
    queue_label: str
    class_label: str
    default_class: str
    classes: Mapping[str, ClassQueue]
    workloads: tuple[Workload, ...]
    # the DeviceClasses Kueue maps to a resource (None: not said; webhook/platform/queue/kueue_classes.py)
    mapped_device_classes: frozenset[str] | None = None

    def workload(self, api_version: str, kind: str) -> Workload | None:
        return next((w for w in self.workloads if w.kind == kind and w.api_version == api_version), None)


@frozen_dataclass
class QueueAssignment(Battery):
    id: PolicyId
    source: SourceRef
    match: MatchSpec
    failure_policy: FailurePolicy
    action: Action
    spec: QueueSpec
    annotations: Mapping[str, str] = field(default_factory=dict)
    phases = frozenset({Phase.MUTATE})
    background = False  # a mutate-only battery: nothing to scan

    async def mutate(self, request: AdmissionRequest, obj: dict[str, Any], ctx: EvalContext) -> MutationOutcome:
        kind = request.kind
        api_version = f"{kind.group}/{kind.version}" if kind.group else kind.version
        workload = self.spec.workload(api_version, kind.kind)
        if workload is None:
            return MutationOutcome(obj, (skipped(self.id, "queue", f"{api_version} {kind.kind} is not a listed workload"),))
        owner = self._managed_owner(obj)
        if owner:
            return MutationOutcome(obj, (skipped(self.id, "queue", f"its {owner} carries the queue"),))
        namespace = ctx.namespace or {}
        labels = (namespace.get("metadata") or {}).get("labels") or {}
        profile_class = labels.get(self.spec.class_label) or self.spec.default_class
        rule = self.spec.classes.get(profile_class)
        if rule is None:
            return MutationOutcome(obj, (skipped(self.id, "queue", f"profile class {profile_class!r} has no queue"),))
        assigned = rule.queue_name.format(namespace=request.namespace, **{"class": profile_class})
        claim = _named_claim(obj) if kind.kind == "Pod" else ""
        if claim:  # queued, Kueue finds it Inadmissible and leaves it gated for good: say so now
            return MutationOutcome(obj, (failed(self.id, "queue", (
                f"this pod names the ResourceClaim {claim}, and Kueue, which queues the pods of this profile, admits "
                "only pods whose devices come from claim templates (resourceClaimTemplateName): it would stay "
                "gated for good. Ask for the devices with a template, or through resources.limits"), self.action),))
        return self._assign(obj, workload, rule, assigned, profile_class)

    def _assign(self, obj: dict[str, Any], workload: Workload, rule: ClassQueue, assigned: str,
                profile_class: str) -> MutationOutcome:
        current = ((obj.get("metadata") or {}).get("labels") or {}).get(self.spec.queue_label)
        if current and current != assigned:
            if rule.user_queue == "Keep" or current in rule.allowed:
                return MutationOutcome(obj, (passed(self.id, "queue", f"kept the chosen queue {current}"),))
            if rule.user_queue == "Deny":
                allowed = ", ".join(sorted({assigned, *rule.allowed}))
                message = (f"{self.spec.queue_label}={current} is not a queue of this {profile_class} profile: "
                           f"use {allowed}, or remove the label to get {assigned}")
                return MutationOutcome(obj, (failed(self.id, "queue", message, self.action),))
        changed = copy.deepcopy(obj)
        changed.setdefault("metadata", {}).setdefault("labels", {})[self.spec.queue_label] = assigned
        if workload.suspend:
            # Kueue starts a suspended job once its workload is admitted; a running one it must stop first
            changed.setdefault("spec", {})["suspend"] = True
        if changed == obj:
            return MutationOutcome(obj, (passed(self.id, "queue", f"already in queue {assigned}"),))
        verb = f"moved from {current} to" if current else "put into"
        message = f"{verb} the {profile_class} queue {assigned}"
        if self.action is Action.AUDIT:  # Audit reports what it would do and changes nothing
            return MutationOutcome(obj, (passed(self.id, "queue", f"would be {message} (Audit)"),))
        return MutationOutcome(changed, (passed(self.id, "queue", message),))

    def _managed_owner(self, obj: Mapping[str, Any]) -> str:
        """The controlling owner, when it is itself a listed workload (a Job owns its pods)."""
        for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
            if ref.get("controller") and self.spec.workload(str(ref.get("apiVersion", "")), str(ref.get("kind", ""))):
                return f"{ref.get('kind')} {ref.get('name', '')}".strip()
        return ""


def _named_claim(pod: Mapping[str, Any]) -> str:
    """The first ResourceClaim the pod names directly (a claim shared by pods), "" when none."""
    for entry in (pod.get("spec") or {}).get("resourceClaims") or ():
        if isinstance(entry, Mapping) and entry.get("resourceClaimName"):
            return str(entry["resourceClaimName"])
    return ""


def compile_queue_spec(spec: Mapping[str, Any]) -> QueueSpec:
    default_user_queue = spec.get("userQueue", "Keep")
    classes = {}
    for name, raw in spec["classes"].items():
        template = raw["queueName"]
        try:
            sample = template.format(namespace="a-profile", **{"class": name})
        except (KeyError, IndexError, ValueError) as exc:
            raise PolicyCompileError(f"spec.classes.{name}.queueName",
                                     f"{template!r}: only {{namespace}} and {{class}} may be used ({exc})") from None
        if len(sample) > LABEL_VALUE_MAX:
            raise PolicyCompileError(f"spec.classes.{name}.queueName", f"{sample!r} is longer than a label value may be")
        classes[name] = ClassQueue(template, raw.get("userQueue", default_user_queue), frozenset(raw.get("allowedQueues", ())))
    workloads = tuple(Workload(w.get("apiVersion", "v1"), w["kind"], bool(w.get("suspend", False)))
                      for w in spec.get("workloads", DEFAULT_WORKLOADS))
    mapped = spec.get("mappedDeviceClasses")
    return QueueSpec(spec.get("queueLabel", QUEUE_LABEL), spec.get("classLabel", CLASS_LABEL),
                     spec.get("defaultClass", "personal"), classes, workloads,
                     frozenset(mapped) if mapped is not None else None)


def compile_queue_assignment(doc: Mapping[str, Any], header: PolicyHeader, env: CompileEnv) -> QueueAssignment:
    spec = doc["spec"]
    compiled = compile_queue_spec(spec)
    kinds = frozenset(w.kind for w in compiled.workloads)
    match = compile_match(spec, env.cel, kinds, frozenset({"CREATE"}), default_namespace_selector=DEFAULT_PROFILE_SELECTOR)
    return QueueAssignment(header.id, header.source, match, failure_policy(spec), action(spec), compiled, header.annotations)


KIND = PolicyKind(API_VERSION, KIND_NAME, SCHEMA)
DOCUMENT_KIND = DocumentKind(KIND, compile_queue_assignment)
