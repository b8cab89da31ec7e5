"""Whose notebook is it? The identity a notebook pod gets its home and token credentials for.

Per profile class (the namespace label `quartermaster.dev/profile-class`, as the quota reads it):
- `Owner`: the profile's `owner` annotation (personal profiles: the owner is the only user);
- `Creator`: who created the Notebook. Kubeflow's web app writes `notebooks.kubeflow.org/creator` on the
  Notebook, and the notebook controller drops annotations containing "notebook" when it builds the
  StatefulSet's pod template, so the pod cannot say; the creator is found through the owner chain
  Pod -> StatefulSet (apps/v1) -> Notebook (kubeflow.org), each link checked by uid;
- `Fixed`: one identity for every notebook of the class (a team's service account).

Fail closed: when the identity cannot be determined, nobody else's is used instead. The policy
either refuses the pod with a message or admits it without injection (`onUnknown`).
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Mapping

from webhook.model.errors import PolicyCompileError
from webhook.model.lookups import LookupRefused, Lookups
from webhook.model.quickinit import frozen_dataclass
from webhook.platform.base import CLASS_LABEL, ProfileInfo
from webhook.platform.notebook.trust import NOTEBOOK_GROUP, TrustSpec, compile_trust, controller_ref

CREATOR_ANNOTATION = "notebooks.kubeflow.org/creator"
# Kubeflow's web apps (Jupyter, central dashboard) write this when no user header reached them: nobody
# authenticated, so it names no one and must never become user "anonymous" with a home of its own.
DEFAULT_ANONYMOUS = ("anonymous@kubeflow.org",)


class Source(str, Enum):
    OWNER = "Owner"
    CREATOR = "Creator"
    FIXED = "Fixed"


@frozen_dataclass
class IdentityRule:
    source: Source
    user: str = ""  # Fixed only


@frozen_dataclass
class IdentitySpec:
    class_label: str
    default_class: str
    classes: Mapping[str, IdentityRule]
    unlisted: IdentityRule  # classes the policy does not name
    creator_annotation: str
    deny_unknown: bool  # False: admit the pod without injection
    anonymous: frozenset[str]  # lower-case e-mails that name nobody (an unauthenticated request)
    trust: TrustSpec  # who may write the links of the chain (trust.py)

    def rule_for(self, namespace: Mapping[str, Any] | None) -> tuple[str, IdentityRule]:
        labels = ((namespace or {}).get("metadata") or {}).get("labels") or {}
        profile_class = str(labels.get(self.class_label) or self.default_class)
        return profile_class, self.classes.get(profile_class, self.unlisted)


DEFAULT_CLASSES = {"personal": IdentityRule(Source.OWNER), "team": IdentityRule(Source.CREATOR)}


def compile_identity(raw: Mapping[str, Any]) -> IdentitySpec:
    classes = dict(DEFAULT_CLASSES)
    for name, item in (raw.get("classes") or {}).items():
        classes[name] = _rule(item, f"spec.identity.classes.{name}")
    # a class nobody thought of must never get the owner's credentials by default
    unlisted = _rule(raw["unlistedClasses"], "spec.identity.unlistedClasses") if "unlistedClasses" in raw \
        else IdentityRule(Source.CREATOR)
    return IdentitySpec(raw.get("classLabel", CLASS_LABEL), raw.get("defaultClass", "personal"), classes, unlisted,
                        raw.get("creatorAnnotation", CREATOR_ANNOTATION), raw.get("onUnknown", "Deny") == "Deny",
                        frozenset(u.strip().lower() for u in raw.get("anonymousUsers", DEFAULT_ANONYMOUS)),
                        compile_trust(raw))


def _rule(item: Mapping[str, Any], field: str) -> IdentityRule:
    source = Source(item["source"])
    user = str(item.get("user", ""))
    if (source is Source.FIXED) != bool(user):
        raise PolicyCompileError(f"{field}.user", "required with source Fixed, and only there")
    return IdentityRule(source, user)


class UnknownIdentity(Exception):
    """The identity cannot be determined: fail closed."""


@frozen_dataclass
class Identity:
    user: str  # the user name: the local part of an e-mail, or a Fixed name
    described: str  # for messages: "creator bob@example.org of Notebook ml-team/training"
    email: str = ""  # the person's e-mail (owner or creator): whom the API server authenticates as them; "" for Fixed


def resolve(spec: IdentitySpec, profile: ProfileInfo, namespace: Mapping[str, Any] | None,
            pod: Mapping[str, Any], lookups: Lookups) -> Identity:
    profile_class, rule = spec.rule_for(namespace)
    if rule.source is Source.FIXED:
        return Identity(rule.user, f"the {profile_class} identity {rule.user}")
    if rule.source is Source.OWNER:
        refuse_anonymous_owner(spec, profile)
        return Identity(profile.user, f"owner {profile.owner or '(none)'} of profile {profile.namespace}", profile.owner)
    email, notebook = _creator(spec, profile.namespace, pod, lookups)
    local = email.split("@", 1)[0].strip() if "@" in email else ""
    if not local:
        raise UnknownIdentity(f"the {spec.creator_annotation} annotation of Notebook {notebook} is {email!r}, "
                              f"not an e-mail")
    return Identity(local, f"creator {email} of Notebook {notebook}", email)


def refuse_anonymous_owner(spec: IdentitySpec, profile: ProfileInfo) -> None:
    """A profile registered while no user header came through has the anonymous e-mail as owner: nobody's."""
    if profile.owner.strip().lower() in spec.anonymous:
        raise UnknownIdentity(f"the owner of profile {profile.namespace} is {profile.owner!r}, which Kubeflow "
                              f"writes when nobody authenticated")


def _creator(spec: IdentitySpec, namespace: str, pod: Mapping[str, Any], lookups: Lookups) -> tuple[str, str]:
    statefulset = _owner(pod, "apps", "StatefulSet", f"pod {namespace}/{_name(pod)}")
    found = _get(lookups, "apps/v1", "StatefulSet", namespace, statefulset)
    notebook_ref = _owner(found, NOTEBOOK_GROUP, "Notebook", f"StatefulSet {namespace}/{statefulset['name']}")
    if notebook_ref["name"] != statefulset["name"]:
        # Kubeflow's notebook controller names the StatefulSet after its Notebook, and names are unique: another
        # StatefulSet claiming the Notebook (one made before the validate phase refused such writes) is not its
        raise UnknownIdentity(f"StatefulSet {namespace}/{statefulset['name']} is not the notebook controller's for "
                              f"Notebook {notebook_ref['name']} (that one is named after its Notebook)")
    notebook = _get(lookups, str(notebook_ref["apiVersion"]), "Notebook", namespace, notebook_ref)
    email = str(((notebook.get("metadata") or {}).get("annotations") or {}).get(spec.creator_annotation, "")).strip()
    where = f"{namespace}/{notebook_ref['name']}"
    if not email:
        raise UnknownIdentity(f"Notebook {where} has no {spec.creator_annotation} annotation")
    if email.lower() in spec.anonymous:
        raise UnknownIdentity(f"the {spec.creator_annotation} annotation of Notebook {where} is {email!r}, which "
                              f"Kubeflow's web app writes when no user header reached it")
    return email, where


def _owner(obj: Mapping[str, Any], group: str, kind: str, what: str) -> Mapping[str, Any]:
    ref = controller_ref(obj, group, kind)
    if ref is None:
        raise UnknownIdentity(f"{what} is not controlled by a {kind} ({group})")
    return ref


def _get(lookups: Lookups, api_version: str, kind: str, namespace: str, ref: Mapping[str, Any]) -> Mapping[str, Any]:
    try:
        found = lookups.get(api_version, kind, namespace, str(ref["name"]))
    except LookupRefused as exc:
        raise UnknownIdentity(str(exc)) from None
    if found is None:
        raise UnknownIdentity(f"{kind} {namespace}/{ref['name']} is not in the cluster state")
    uid = (found.get("metadata") or {}).get("uid")
    if ref.get("uid") and uid != ref.get("uid"):
        # the same name, another object (deleted and created again): not this pod's owner
        raise UnknownIdentity(f"{kind} {namespace}/{ref['name']} has uid {uid}, not the owner's {ref['uid']}")
    return found


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return str(meta.get("name") or meta.get("generateName") or "")
