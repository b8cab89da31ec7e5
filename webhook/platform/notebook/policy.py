"""NotebookInjection (quartermaster.dev/v1alpha1): the mutate-phase battery that gives a Kubeflow notebook
pod its user's home directory and an OIDC token kept fresh by a sidecar.

Rules it reports: `identity` (whose notebook it is cannot be determined: fail closed), `owner` (the
user is unusable, or the notebook's uid is), `pod-security` (the namespace forbids an injected volume),
`merge` (the pod conflicts with what the policy injects), `inject` (done, or already there). A failure is enforced or audited as `spec.mode` says;
either way a failing pod is left exactly as it came.

Its validate phase keeps the identity unforgeable (trust.py), in every profile namespace: `credentials`
(a pod other than a notebook's refresher reads a credentials Secret), `notebook-creator` (a Notebook's
creator annotation is not its requester's, or changes, or someone else changes its spec), `notebook-statefulset` (a StatefulSet controlled
by a Notebook written by anyone but the notebook controller), `ephemeral-containers` (kubectl debug of a pod
holding someone's credentials by anyone else). It reports failures only.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Mapping

from webhook.model.policy import (EvalContext, FailurePolicy, MutationOutcome, Phase, PolicyId, SourceRef,
                                  ValidationOutcome)
from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Action, failed, passed, skipped
from webhook.model.review import AdmissionRequest
from webhook.platform.base import API_VERSION, DEFAULT_PROFILE_SELECTOR, Battery, ProfileInfo, profile_info
from webhook.platform.notebook.config import NotebookSpec, compile_spec
from webhook.platform.notebook.identity import Identity, Source, UnknownIdentity, refuse_anonymous_owner, resolve
from webhook.platform.notebook.credentials import secrets_read
from webhook.platform.notebook.inject import credential_problems, credentials_secret, inject, notebook_indices
from webhook.platform.notebook.merge import Conflict
from webhook.platform.notebook.podsecurity import ENFORCE_LABEL, enforced_level, forbidden_volumes
from webhook.platform.notebook.render import Desired, InvalidOwner, notebook_uid, render
from webhook.platform.notebook.schema import KIND as KIND_NAME
from webhook.platform.notebook.schema import SCHEMA
from webhook.platform.notebook.trust import (ephemeral_refusal, notebook_refusal, pod_creator_refusal,
                                             statefulset_refusal)
from webhook.policy.common import MatchSpec, action, compile_match, failure_policy
from webhook.policy.family import CompileEnv, PolicyKind
from webhook.policy.perdocument import DocumentKind, PolicyHeader


GUARDED_KINDS = frozenset({"Pod", "Notebook", "StatefulSet"})
EPHEMERAL = "ephemeralcontainers"  # the Pod subresource kubectl debug writes
RENDERS_KEPT = 4096  # users whose rendering a policy keeps (a few hundred profiles, each with its creators)


@frozen_dataclass
class NotebookInjection(Battery):
    id: PolicyId
    source: SourceRef
    match: MatchSpec  # the pods to inject (mutate phase)
    guard: MatchSpec  # what the validate phase checks: every Pod, Notebook and StatefulSet of a profile
    failure_policy: FailurePolicy
    action: Action
    spec: NotebookSpec
    annotations: Mapping[str, str] = field(default_factory=dict)
    # what render() made for each (profile, identity, uid) lately: one per user, the same for all their pods
    rendered: dict[tuple[ProfileInfo, Identity | None, int | None], Desired] = field(
        default_factory=dict, init=False, repr=False, compare=False)
    phases = frozenset({Phase.MUTATE, Phase.VALIDATE})

    def matches(self, request: AdmissionRequest, obj: Mapping[str, Any] | None, ctx: EvalContext) -> bool:
        if request.sub_resource:
            # kubectl debug: a container added to an existing pod, which MatchSpec (whole objects only) never sees
            return request.sub_resource == EPHEMERAL and request.kind.kind == "Pod" and self._in_profile(request, ctx)
        return self.match.matches(request, obj, ctx) or self.guard.matches(request, obj, ctx)

    def _in_profile(self, request: AdmissionRequest, ctx: EvalContext) -> bool:
        labels = ((ctx.namespace or {}).get("metadata") or {}).get("labels")
        return self.guard.matches_namespace_name(request.namespace) and self.guard.namespace_selector.matches(labels)

    async def mutate(self, request: AdmissionRequest, obj: dict[str, Any], ctx: EvalContext) -> MutationOutcome:
        if not self.match.matches(request, obj, ctx):
            return MutationOutcome(obj)  # matched for the validate phase only
        profile = profile_info(ctx.namespace, request.namespace)
        try:
            identity = self._identity(profile, request, ctx, obj)
        except UnknownIdentity as exc:
            message = (f"whose notebook this is cannot be determined ({exc}); no one else's home or credentials are "
                       f"used instead. Create the notebook through Kubeflow, or ask the platform team")
            if self.spec.identity.deny_unknown:
                return MutationOutcome(obj, (failed(self.id, "identity", message, self.action),))
            return MutationOutcome(obj, (skipped(self.id, "identity", f"not injected: {message}"),))
        indices = None  # the notebook containers, found once for the uid and the injection
        try:
            if self.spec.refresher:
                indices = notebook_indices(self.spec, obj)
            uid = self._uid(obj, indices) if indices is not None else None
            desired = self._render(profile, identity, uid)
        except InvalidOwner as exc:
            if self.spec.owner.deny_invalid:
                return MutationOutcome(obj, (failed(self.id, "owner", str(exc), self.action),))
            return MutationOutcome(obj, (skipped(self.id, "owner", f"not injected: {exc}"),))
        forbidden = self._forbidden(desired, ctx.namespace)
        if forbidden:
            return MutationOutcome(obj, (failed(self.id, "pod-security", forbidden, self.action),))
        return self._inject(obj, desired, indices)

    def _identity(self, profile: ProfileInfo, request: AdmissionRequest, ctx: EvalContext,
                  obj: Mapping[str, Any]) -> Identity | None:
        """None: the profile owner (owner_values reports a missing or malformed owner)."""
        refusal = pod_creator_refusal(self.spec.identity.trust, request)
        if refusal:
            raise UnknownIdentity(refusal)
        _, rule = self.spec.identity.rule_for(ctx.namespace)
        if rule.source is Source.OWNER:
            refuse_anonymous_owner(self.spec.identity, profile)
            return None
        return resolve(self.spec.identity, profile, ctx.namespace, obj, ctx.lookups)

    async def validate(self, request: AdmissionRequest, obj: Mapping[str, Any], ctx: EvalContext) -> ValidationOutcome:
        if ctx.background:
            return ValidationOutcome()  # who wrote an object is known at its admission only
        kind, trust = request.kind.kind, self.spec.identity.trust
        if kind == "StatefulSet":
            rule, refusal = "notebook-statefulset", statefulset_refusal(trust, request)
        elif kind == "Notebook":
            rule, refusal = "notebook-creator", notebook_refusal(trust, request, self.spec.identity.creator_annotation)
        elif kind == "Pod" and request.operation == "CREATE":
            rule, refusal = "credentials", self._credentials_refusal(request, obj, ctx)
        elif kind == "Pod" and request.sub_resource == EPHEMERAL:
            rule, refusal = "ephemeral-containers", self._ephemeral_refusal(request, obj, ctx)
        else:
            return ValidationOutcome()
        return ValidationOutcome((failed(self.id, rule, refusal, self.action),) if refusal else ())

    def _credentials_refusal(self, request: AdmissionRequest, obj: Mapping[str, Any], ctx: EvalContext) -> str:
        """Any pod of the profile may be one that reads a credentials Secret: only the refresher of a notebook
        pod with an identity may, and only that identity's Secret."""
        refresher = self.spec.refresher
        if refresher is None:
            return ""
        pod_spec = obj.get("spec") or {}
        read = [(name, where) for name, where in secrets_read(pod_spec) if refresher.secret_pattern.fullmatch(name)]
        if not read:
            return ""
        desired, why = self._notebook_rendering(request, obj, ctx)
        own = credentials_secret(self.spec, desired) if desired is not None else ""
        foreign = [(name, where) for name, where in read if name != own]
        if foreign:
            name, where = foreign[0]
            why = why or f"this notebook's own credentials are {own!r}"
        else:
            assert desired is not None
            name, where = read[0]
            why = "; ".join(c.describe() for c in credential_problems(self.spec, desired, pod_spec))
        if not why:
            return ""
        return (f"{where} reads Secret {name!r}, a notebook user's token credentials "
                f"(spec.tokenRefresher.credentials.secretName); only the token refresher of that user's notebook "
                f"may, and {why}. Remove the reference; notebooks get their token from the injected refresher")

    def _ephemeral_refusal(self, request: AdmissionRequest, obj: Mapping[str, Any], ctx: EvalContext) -> str:
        """A pod that holds a credentials Secret (it was admitted as a notebook's) takes ephemeral containers from
        the identity's own person only."""
        refresher = self.spec.refresher
        held = (request.old_object or obj).get("spec") or {}
        if refresher is None or not any(refresher.secret_pattern.fullmatch(name) for name, _ in secrets_read(held)):
            return ""
        profile = profile_info(ctx.namespace, request.namespace)
        _, rule = self.spec.identity.rule_for(ctx.namespace)
        try:
            holder = profile.owner if rule.source is Source.OWNER else \
                resolve(self.spec.identity, profile, ctx.namespace, obj, ctx.lookups).email
        except UnknownIdentity:
            holder = ""
        return ephemeral_refusal(request, holder)

    def _notebook_rendering(self, request: AdmissionRequest, obj: Mapping[str, Any],
                            ctx: EvalContext) -> tuple[Desired | None, str]:
        """What the mutate phase injects into this pod, or why it injects nothing."""
        if not self.match.matches(request, obj, ctx):
            return None, "this pod is not a notebook pod"
        profile = profile_info(ctx.namespace, request.namespace)
        try:
            identity = self._identity(profile, request, ctx, obj)
            uid = self._uid(obj, notebook_indices(self.spec, obj))
            return self._render(profile, identity, uid), ""
        except (UnknownIdentity, InvalidOwner) as exc:
            return None, f"this pod has no identity: {exc}"

    def _uid(self, obj: Mapping[str, Any], indices: list[int]) -> int | None:
        if self.spec.refresher is None:
            return None
        return notebook_uid(self.spec.refresher.default_uid, obj, [obj["spec"]["containers"][i] for i in indices])

    def _render(self, profile: ProfileInfo, identity: Identity | None, uid: int | None) -> Desired:
        """render(), made once per user and shared by their pods: the injection inserts copies of the volumes,
        mounts, env entries and sidecar, and nothing edits what it inserted (every mutator copies on write), so
        their nested parts need no copy of their own. A refusal (InvalidOwner) is not kept: it is rendered again."""
        key = (profile, identity, uid)
        desired = self.rendered.get(key)
        if desired is None:
            desired = render(self.spec, profile, identity, uid)
            if len(self.rendered) >= RENDERS_KEPT:
                self.rendered.clear()
            self.rendered[key] = desired
        return desired

    def _forbidden(self, desired: Desired, namespace: Mapping[str, Any] | None) -> str:
        level = enforced_level(namespace, self.spec.default_pod_security)
        volumes = forbidden_volumes(desired.volumes, level)
        if not volumes:
            return ""
        return (f"not injected: volume {', '.join(volumes)} is forbidden by the namespace's Pod Security level "
                f"{level} ({ENFORCE_LABEL}), so the pod would be refused; ask the platform team to mount homes "
                f"through a CSI volume or a PersistentVolumeClaim (spec.home.volume)")

    def _inject(self, obj: dict[str, Any], desired: Desired, indices: list[int] | None = None) -> MutationOutcome:
        result = inject(self.spec, desired, obj, indices)
        if not result.containers:
            return MutationOutcome(obj, (skipped(self.id, "inject", "the pod has no notebook container"),))
        warnings = tuple(f"{self.name}: {note}" for note in result.kept) if result.kept else ()
        if result.conflicts:
            outcome = failed(self.id, "merge", conflict_message(result.conflicts), self.action)
            return MutationOutcome(obj, (outcome,), warnings=warnings)
        if not result.changed:
            return MutationOutcome(obj, (passed(self.id, "inject", "already injected"),), warnings=warnings)
        message = f"injected for {desired.user} into {', '.join(result.containers)}"
        # the injected pod is a dict of the injection's own (inject copies on write): it needs no copy
        pod = result.pod if type(result.pod) is dict else dict(result.pod)
        return MutationOutcome(pod, (passed(self.id, "inject", message),), warnings=warnings)


def conflict_message(conflicts: tuple[Conflict, ...]) -> str:
    # the summary comes first: a warning is cut at 120 characters, the audit annotation keeps it all
    count = f"{len(conflicts)} conflicts" if len(conflicts) > 1 else "a conflict"
    settings = ", ".join(dict.fromkeys(c.setting for c in conflicts))
    details = "; ".join(c.describe() for c in conflicts)
    return (f"not injected, {count} with the pod: {details}. Rename or remove the pod's item, "
            f"or ask the platform team about {settings}")


def compile_notebook_injection(doc: Mapping[str, Any], header: PolicyHeader, env: CompileEnv) -> NotebookInjection:
    spec = doc["spec"]
    compiled = compile_spec(spec)
    label = compiled.containers.notebook_label
    # notebook pods are the ones carrying the notebook label, unless the YAML selects them otherwise
    match_spec = spec if "objectSelector" in spec else {
        **spec, "objectSelector": {"matchExpressions": [{"key": label, "operator": "Exists"}]}}
    match = compile_match(match_spec, env.cel, frozenset({"Pod"}), frozenset({"CREATE"}),
                          default_namespace_selector=DEFAULT_PROFILE_SELECTOR)
    # the profile namespaces alone: labels and match conditions are the tenant's to choose
    guard = compile_match({"namespaceSelector": spec["namespaceSelector"]} if "namespaceSelector" in spec else {},
                          env.cel, GUARDED_KINDS, frozenset({"CREATE", "UPDATE"}),
                          default_namespace_selector=DEFAULT_PROFILE_SELECTOR)
    return NotebookInjection(header.id, header.source, match, guard, failure_policy(spec), action(spec), compiled,
                             header.annotations)


KIND = PolicyKind(API_VERSION, KIND_NAME, SCHEMA)
DOCUMENT_KIND = DocumentKind(KIND, compile_notebook_injection)
