"""Who may write what a notebook's identity is derived from.

A tenant controls every field of their own objects, so the chain Pod -> StatefulSet -> Notebook ->
creator annotation is only as good as the writers of each link. Quartermaster trusts the review's
`userInfo` (set by the API server from the authenticated client) and nothing the objects say about
themselves:
- a pod gets an identity only when the StatefulSet controller created it: then its controller
  ownerReference is the StatefulSet the controller manages, not one a user typed;
- a StatefulSet controlled by a Notebook is written (created, or its spec changed) only by the notebook
  controller: then its pod template is the Notebook's, not a teammate's copy with other code;
- a Notebook's creator annotation is checked at its CREATE against the requester (the requester itself,
  or whatever the Kubeflow web app, which authenticates users, wrote) and never changed afterwards; its
  spec, the template of its pods, is changed by that creator only.
Every Notebook in the cluster passed these checks (the validating webhook refuses the rest), so the
annotation of a stored Notebook is the checked creator.
"""

from __future__ import annotations

from typing import Any, Mapping

from webhook.model.quickinit import frozen_dataclass
from webhook.model.review import AdmissionRequest
from webhook.platform.base import is_mapping

# kube-controller-manager's StatefulSet controller: its own ServiceAccount with
# --use-service-account-credentials (kubeadm's default), the manager's identity without it
DEFAULT_POD_CREATORS = ("system:serviceaccount:kube-system:statefulset-controller", "system:kube-controller-manager")
# Kubeflow's manifests (namespace kubeflow): the notebook controller and the Jupyter web app
DEFAULT_NOTEBOOK_CONTROLLERS = ("system:serviceaccount:kubeflow:notebook-controller-service-account",)
DEFAULT_NOTEBOOK_WEB_APPS = ("system:serviceaccount:kubeflow:jupyter-web-app-service-account",)
NOTEBOOK_GROUP = "kubeflow.org"


@frozen_dataclass
class TrustSpec:
    """The identities the platform runs (policy YAML, spec.identity)."""

    pod_creators: frozenset[str]
    notebook_controllers: frozenset[str]
    notebook_web_apps: frozenset[str]


def compile_trust(raw: Mapping[str, Any]) -> TrustSpec:
    return TrustSpec(frozenset(raw.get("podCreators", DEFAULT_POD_CREATORS)),
                     frozenset(raw.get("notebookControllers", DEFAULT_NOTEBOOK_CONTROLLERS)),
                     frozenset(raw.get("notebookWebApps", DEFAULT_NOTEBOOK_WEB_APPS)))


def pod_creator_refusal(trust: TrustSpec, request: AdmissionRequest | None) -> str:
    """Why this pod cannot carry anyone's identity ("" when it was created by the StatefulSet controller)."""
    user = request.user.username if request is not None else ""
    if user in trust.pod_creators:
        return ""
    return (f"the pod was created by {user or '(nobody)'}, not by the StatefulSet controller "
            f"(spec.identity.podCreators), so its ownerReferences prove nothing")


def controller_ref(obj: Mapping[str, Any] | None, group: str, kind: str) -> Mapping[str, Any] | None:
    """The object's controller ownerReference to a `kind` of API group `group`, if any."""
    for ref in ((obj or {}).get("metadata") or {}).get("ownerReferences") or ():
        if is_mapping(ref) and ref.get("controller") and ref.get("kind") == kind and ref.get("name") \
                and str(ref.get("apiVersion", "")).rpartition("/")[0] == group:
            return ref
    return None


def statefulset_refusal(trust: TrustSpec, request: AdmissionRequest) -> str:
    """A StatefulSet controlled by a Notebook, written by anyone but the notebook controller: its pods would
    run the writer's template with the Notebook creator's home and token. Metadata-only updates (labels,
    finalizers, the garbage collector's work) change no pod, and a StatefulSet that leaves its Notebook
    loses the identity with it, so both pass."""
    new = controller_ref(request.object, NOTEBOOK_GROUP, "Notebook")
    if new is None or request.user.username in trust.notebook_controllers:
        return ""
    if request.operation == "UPDATE":
        old = controller_ref(request.old_object, NOTEBOOK_GROUP, "Notebook")
        same_owner = old is not None and old.get("uid") == new.get("uid") and old.get("name") == new.get("name")
        if same_owner and (request.object or {}).get("spec") == (request.old_object or {}).get("spec"):
            return ""
    what = "create" if request.operation == "CREATE" else "change"
    return (f"only the notebook controller (spec.identity.notebookControllers) may {what} a StatefulSet controlled "
            f"by Notebook {new.get('name')!r}, and {request.user.username or '(nobody)'} is not it: its pods get "
            f"the Notebook creator's home and credentials. Edit the Notebook instead, or create a StatefulSet "
            f"without that ownerReference")


def notebook_refusal(trust: TrustSpec, request: AdmissionRequest, annotation: str) -> str:
    """The creator annotation of a Notebook as written: the requester's own name at CREATE (the web app
    writes the user it authenticated), unchanged by every UPDATE. The spec of a Notebook with a creator (its
    pod template, which runs with the creator's home and credentials) is changed by the creator only."""
    user = request.user.username
    new = _annotation(request.object, annotation)
    if request.operation == "UPDATE":
        old = _annotation(request.old_object, annotation)
        if new != old:
            return (f"the {annotation} annotation records who created the Notebook and never changes "
                    f"(was {old!r}, now {new!r}); create a new Notebook instead")
        if old is None or user == old or user in trust.notebook_controllers \
                or (request.object or {}).get("spec") == (request.old_object or {}).get("spec"):
            return ""
        return (f"only the Notebook's creator {old!r} may change its spec, not {user!r}: its pods run with the "
                f"creator's home and credentials. Create a Notebook of your own")
    if new is None or new == user or user in trust.notebook_web_apps:
        return ""
    return (f"the {annotation} annotation must name the requester {user!r}, not {new!r}: the notebook's pods get "
            f"its creator's home and credentials. Leave it out, or create the notebook through Kubeflow")


def _annotation(obj: Mapping[str, Any] | None, name: str) -> str | None:
    value = (((obj or {}).get("metadata") or {}).get("annotations") or {}).get(name)
    return None if value is None else str(value)


def ephemeral_refusal(request: AdmissionRequest, holder: str) -> str:
    """Ephemeral containers added (pods/ephemeralcontainers) to a pod holding `holder`'s credentials: they could
    mount its volumes (the token, the credentials, the home) and run anything beside them, so only the
    holder (their e-mail, as the API server authenticates them) may add one: `kubectl debug` of their own
    notebook. `holder` "": nobody may (a Fixed identity, or one that cannot be told)."""
    old = {c.get("name") for c in ((request.old_object or {}).get("spec") or {}).get("ephemeralContainers") or ()
           if is_mapping(c)}
    added = [c.get("name") for c in ((request.object or {}).get("spec") or {}).get("ephemeralContainers") or ()
             if is_mapping(c) and c.get("name") not in old]
    user = request.user.username
    if not added or (holder and user == holder):
        return ""
    return (f"ephemeral container {added[0]!r} would run beside the home and credentials of "
            f"{holder or 'a notebook identity'} in this notebook pod; only {holder or 'no one'} may add one "
            f"(kubectl debug), not {user or '(nobody)'!r}")
