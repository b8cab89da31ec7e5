"""Policies kept as cluster objects (GitOps: `kubectl apply` of a ProfileQuota, a Kyverno ClusterPolicy):
live mode watches the policy kinds the engine knows, through the same informers as the cluster state,
and feeds them to the policy source beside the --policies directory (webhook/policy/source.py says
how files and objects combine).

A refused object is told so where its owner looks: a `Ready` condition with status False and the
reason in its status (as Kyverno marks its policies), and a Warning Event on it; once it loads, the
condition turns True. Both are written only when the verdict on an object changes, so a reload of an
unchanged set writes nothing. A kind whose CRD is not installed is simply absent.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from datetime import datetime, timezone
from typing import Any, Callable, Mapping, Sequence

from kubernetes.client.exceptions import ApiException

from webhook.kube.cache import ObjectCache
from webhook.kube.client import ApiStatus, KubeApi
from webhook.kube.informer import Informer
from webhook.kube.resources import EVENTS, ResourceType
from webhook.kube.settings import LiveSettings
from webhook.model.errors import PolicyLoadError
from webhook.model.policy import NOTHING_SHOWN
from webhook.policy.documents import Document
from webhook.policy.object_check import authored, object_name
from webhook.reports.events import event_name

log = logging.getLogger(__name__)

# The policy kinds that are cluster objects, wherever their CRDs are installed (each optional).
POLICY_RESOURCES = (
    ResourceType("ProfileQuota", "quartermaster.dev", "v1alpha1", "profilequotas", False, optional=True),
    ResourceType("NotebookInjection", "quartermaster.dev", "v1alpha1", "notebookinjections", False, optional=True),
    ResourceType("DeviceClaimRewrite", "quartermaster.dev", "v1alpha1", "deviceclaimrewrites", False, optional=True),
    ResourceType("QueueAssignment", "quartermaster.dev", "v1alpha1", "queueassignments", False, optional=True),
    ResourceType("ClusterPolicy", "kyverno.io", "v1", "clusterpolicies", False, optional=True),
    ResourceType("Policy", "kyverno.io", "v1", "policies", True, optional=True),
    ResourceType("PolicyException", "kyverno.io", "v2", "policyexceptions", True, optional=True),
    ResourceType("ValidatingPolicy", "policies.kyverno.io", "v1", "validatingpolicies", False, optional=True),
    ResourceType("MutatingPolicy", "policies.kyverno.io", "v1", "mutatingpolicies", False, optional=True),
    ResourceType("GeneratingPolicy", "policies.kyverno.io", "v1", "generatingpolicies", False, optional=True),
    # the CEL policies' exceptions (`exceptions.allowedImages`, policyRefs by kind): a kind of their own group
    ResourceType("PolicyException", "policies.kyverno.io", "v1", "policyexceptions", True, optional=True),
    # a tenant's own CEL policies: the family binds each to its namespace (webhook/families/cel/base.py)
    ResourceType("NamespacedValidatingPolicy", "policies.kyverno.io", "v1", "namespacedvalidatingpolicies", True,
                 optional=True),
    ResourceType("NamespacedMutatingPolicy", "policies.kyverno.io", "v1", "namespacedmutatingpolicies", True,
                 optional=True),
    ResourceType("NamespacedGeneratingPolicy", "policies.kyverno.io", "v1", "namespacedgeneratingpolicies", True,
                 optional=True),
    # Kubernetes' own admission policies: only where Quartermaster is told to own them (--policy-objects),
    # since the API server evaluates them itself otherwise
    ResourceType("ValidatingAdmissionPolicy", "admissionregistration.k8s.io", "v1", "validatingadmissionpolicies",
                 False, optional=True),
    ResourceType("ValidatingAdmissionPolicyBinding", "admissionregistration.k8s.io", "v1",
                 "validatingadmissionpolicybindings", False, optional=True),
    ResourceType("MutatingAdmissionPolicy", "admissionregistration.k8s.io", "v1", "mutatingadmissionpolicies",
                 False, optional=True),
    ResourceType("MutatingAdmissionPolicyBinding", "admissionregistration.k8s.io", "v1",
                 "mutatingadmissionpolicybindings", False, optional=True),
)
TIMEOUT = (5.0, 10.0)


_FIRST_OF_KIND = {r.kind: r.group for r in reversed(POLICY_RESOURCES)}


def object_file(resource: ResourceType, obj: Mapping[str, Any]) -> str:
    """How errors name the object: `ClusterPolicy/require-team (cluster object)`; a kind that another group
    declares first is named with its group (`PolicyException.policies.kyverno.io/team-a/x`), so that the two
    kinds' objects of one name stay apart."""
    meta = obj.get("metadata") or {}
    first = _FIRST_OF_KIND.get(resource.kind, resource.group) == resource.group
    kind = resource.kind if first else f"{resource.kind}.{resource.group}"
    return object_name(kind, str(meta.get("namespace") or "") if resource.namespaced else "", str(meta.get("name", "")))


def as_document(resource: ResourceType, obj: Mapping[str, Any]) -> Document:
    return Document(object_file(resource, obj), 0, authored(obj, resource.api_version, resource.kind), None)


class PolicyObjectFeed:
    """The ObjectFeed of webhook.policy.source for live mode."""

    def __init__(self, api: KubeApi, settings: LiveSettings, known: Callable[[str, str], bool],
                 resources: Sequence[ResourceType] = POLICY_RESOURCES) -> None:
        self.api = api
        self.settings = settings
        self.resources = tuple(r for r in resources
                               if r.group in settings.policy_object_groups and known(r.api_version, r.kind))
        self.caches = {r: ObjectCache(r.namespaced) for r in self.resources}
        self.informers = [Informer(api, r, self.caches[r], settings) for r in self.resources]
        self._verdicts: dict[tuple[str, str, Any], str] = {}  # (object file, uid, generation) -> "" or the refusal written
        self._lock = threading.Lock()

    def start(self) -> None:
        for informer in self.informers:
            informer.start()

    def stop(self, timeout: float = 5.0) -> None:
        for informer in self.informers:
            informer.stop(timeout=timeout)

    def _objects(self) -> list[tuple[ResourceType, Mapping[str, Any]]]:
        return [(r, obj) for r in self.resources for obj in self.caches[r].list()]

    def documents(self) -> Sequence[Document]:
        return [as_document(r, obj) for r, obj in self._objects()]

    def fingerprint(self) -> str:
        """Over what the author wrote, not resourceVersion: our own status writes must not cause a reload."""
        digest = hashlib.sha256()
        for doc in sorted(self.documents(), key=lambda d: d.file):
            digest.update(doc.file.encode() + b"\0" + json.dumps(doc.data, sort_keys=True, default=str).encode() + b"\0")
        return digest.hexdigest()

    def refused(self, considered: Sequence[Document], refusals: Mapping[str, Sequence[PolicyLoadError]],
                shown: Mapping[str, Mapping[str, Any]] = NOTHING_SHOWN) -> None:
        loaded = {doc.file: doc.data for doc in considered}
        present: set[tuple[str, str, Any]] = set()
        for resource, obj in self._objects():
            name = object_file(resource, obj)
            if loaded.get(name) != as_document(resource, obj).data:  # arrived or changed while the set was
                continue                                              # loading: the next load judges it
            meta = obj.get("metadata") or {}
            # a recreated object (new uid) or a new generation is told again, even with the same verdict
            key = (name, str(meta.get("uid", "")), meta.get("generation"))
            present.add(key)
            text = "; ".join(e.message if not e.field else f"field {e.field}: {e.message}" for e in refusals.get(name, ()))
            extra = {} if text else dict(shown.get(name) or {})
            verdict = text + json.dumps(extra, sort_keys=True, default=str)
            with self._lock:
                if self._verdicts.get(key) == verdict:
                    continue
                self._verdicts[key] = verdict
            try:
                self._tell(resource, obj, text, extra)
            except ApiException as exc:  # feedback is best effort: the load itself already happened
                log.warning("could not mark %s: %s", name, ApiStatus.of(exc))
            except Exception as exc:
                log.warning("could not mark %s: %s", name, exc)
        with self._lock:  # objects gone (or past generations) are forgotten
            for key in [k for k in self._verdicts if k not in present]:
                del self._verdicts[key]

    def _tell(self, resource: ResourceType, obj: Mapping[str, Any], refusal: str,
              extra: Mapping[str, Any] = NOTHING_SHOWN) -> None:
        """`extra`: what else the status shows of a loaded policy (PolicyTraits.shown)."""
        meta = obj.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name", ""))
        now = datetime.now(timezone.utc)
        condition = {"type": "Ready", "status": "False" if refusal else "True",
                     "reason": "Refused" if refusal else "Loaded",
                     "message": (f"Quartermaster refused this policy: {refusal}" if refusal
                                 else "Quartermaster loaded this policy")[:1024],
                     "lastTransitionTime": now.strftime("%Y-%m-%dT%H:%M:%SZ")}
        if meta.get("generation") is not None:
            condition["observedGeneration"] = meta["generation"]
        try:
            self.api.patch_status(resource, namespace, name, {**extra, **ready_status(resource, condition)}, TIMEOUT)
        except ApiException as exc:
            if exc.status != 422 or not extra:
                raise
            # what else the status shows does not fit the kind's schema here (another release of its CRD): the
            # verdict alone, so that Ready is never lost with it
            log.warning("status of %s: %s; writing the Ready condition alone", object_file(resource, obj), ApiStatus.of(exc))
            self.api.patch_status(resource, namespace, name, ready_status(resource, condition), TIMEOUT)
        if refusal:
            self.api.create(EVENTS, _refusal_event(resource, obj, refusal, self.settings.who, now), TIMEOUT)


def ready_status(resource: ResourceType, condition: Mapping[str, Any]) -> dict[str, Any]:
    """The status patch that carries `condition` where the kind's CRD keeps conditions. Kyverno's CEL policy
    kinds (policies.kyverno.io) keep them under `status.conditionStatus`, beside `ready`; the API server
    prunes a top-level `status.conditions` there, so the verdict would never be seen."""
    if resource.group == "policies.kyverno.io":
        return {"conditionStatus": {"ready": condition["status"] == "True", "conditions": [dict(condition)],
                                    "message": condition["message"]}}
    return {"conditions": [dict(condition)]}


def _refusal_event(resource: ResourceType, obj: Mapping[str, Any], refusal: str, instance: str,
                   now: datetime) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    regarding = {"apiVersion": resource.api_version, "kind": resource.kind, "name": str(meta.get("name", ""))}
    if meta.get("namespace"):
        regarding["namespace"] = str(meta["namespace"])
    if meta.get("uid"):
        regarding["uid"] = str(meta["uid"])
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": event_name(str(meta.get("name", "")), now),
                         "namespace": str(meta.get("namespace") or "default")},
            "eventTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), "reportingController": "quartermaster.dev/webhook",
            "reportingInstance": instance[:128], "action": "Load", "reason": "PolicyRefused", "type": "Warning",
            "note": f"Quartermaster refused this policy: {refusal}"[:1024], "regarding": regarding}
