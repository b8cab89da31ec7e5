"""ProfileQuota: per-profile GPU and storage quotas, enforced on every Pod, PVC and ResourceClaim write.

The request path: resolve the profile's limits, then, under the profile's lock, take the profile's
usage totals (kept incrementally, totals.py), lay the in-flight reservations and the request over
them, decide, and reserve what was admitted until the cluster state shows it. Nothing in between
awaits: the decision costs O(objects the request touches), so it stays on the event loop (a worker
thread hop cost more than the decision and let other requests for the profile queue on its lock).
Only a profile's first count, O(its objects), runs in a worker thread.
A state that cannot report its changes gets a recount of the profile, as before.
"""

from __future__ import annotations

import asyncio
import functools
import time
from dataclasses import field, replace
from typing import Any, Callable, Mapping

from webhook.model.cluster import POD, PVC, RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE, ClusterState
from webhook.model.policy import EvalContext, FailurePolicy, Phase, PolicyId, SourceRef, ValidationOutcome
from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Action, RuleResult, errored, failed, passed, skipped
from webhook.model.review import AdmissionRequest
from webhook.model.selectors import MATCH_ALL
from webhook.platform.base import API_VERSION, DEFAULT_PROFILE_SELECTOR, Battery
from webhook.platform.quota.accelerators import (pod_resource_names, requested_classes, unknown_class_message,
                                                  unknown_message)
from webhook.platform.quota.check import Decision, RuleOutcome, Subject, decide, decide_usage
from webhook.platform.quota.controllers import CONTROLLER_KINDS, judge_controller
from webhook.platform.quota.holds import hold_charges, hold_of, with_charges, without_its_pod
from webhook.platform.quota.extended import marked_extended
from webhook.platform.quota.limits import LimitsMemo
from webhook.platform.quota.objects import COUNTED_KINDS, ProfileObjects
from webhook.platform.quota.quantities import out_of_range
from webhook.platform.quota.settings import KIND_NAME, SCHEMA, QuotaSettings, compile_settings
from webhook.platform.quota.index import IndexedObjects, UsageIndex
from webhook.platform.quota.records import Before, KnownUsage
from webhook.platform.quota.totals import ProfileUsage
from webhook.platform.quota.usage import Usage
from webhook.policy.common import MatchSpec, action, compile_match, failure_policy
from webhook.policy.family import CompileEnv, PolicyKind
from webhook.policy.perdocument import DocumentKind, PolicyHeader
from webhook.state.claim_authors import AuthoredClaim
from webhook.state.ledger import CountedObjects, Reservation, ReservationLedger, ReservationLedgers, hold_shown
from webhook.state.replicas import Hold, HoldScope, Ruling, SharedReservations

# templates too: creating one that pending pods already reference charges those pods; controllers are
# checked (never charged) so that a pod template that can never fit is refused up front
KINDS = frozenset({POD, PVC, RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE}) | CONTROLLER_KINDS
OPERATIONS = frozenset({"CREATE", "UPDATE"})


def _subject_object(request: AdmissionRequest, obj: Mapping[str, Any]) -> tuple[Subject, dict[str, Any]]:
    """The object with the kind, namespace and name the counting and the reservation key need."""
    meta = obj.get("metadata")
    kind = request.kind.kind
    if type(obj) is dict and type(meta) is dict and "apiVersion" in obj and obj.get("kind") == kind:
        name = meta.get("name")
        if type(name) is str and name and meta.get("namespace") == request.namespace:
            # already so (the API server's object): the copies below would be equal, key for key and in order,
            # and request objects are never changed (model.review), so the object itself serves
            return Subject(kind, name, request.operation), obj
    meta = dict(meta or {})
    name = str(meta.get("name") or request.name or "")
    if not name:  # validating admission sees generated names; this only guards odd callers
        name = f"{meta.get('generateName', '')}<{request.uid}>"
    meta.update(name=name, namespace=request.namespace)
    full = {**obj, "kind": request.kind.kind, "apiVersion": obj.get("apiVersion", request.kind.api_version), "metadata": meta}
    return Subject(request.kind.kind, name, request.operation), full


READ_THROUGH_TIMEOUT = 2.0  # seconds, at most, for one template the state does not show


async def read_missing_templates(state: ClusterState, namespace: str, pod: Mapping[str, Any], deadline: float) -> None:
    """The claim templates the judged pod names that the state does not show, read through to their source: with
    two replicas, the one that answered the mutating call created them, and this one's informer may not have
    delivered them yet (a missing template counts nothing). Bounded by the request's deadline."""
    for entry in (pod.get("spec") or {}).get("resourceClaims") or ():
        name = entry.get("resourceClaimTemplateName") if isinstance(entry, Mapping) else None
        if not isinstance(name, str) or not name or state.get(RESOURCE_CLAIM_TEMPLATE, namespace, name) is not None:
            continue
        # a third of what is left at most: the decision and the Hold it writes need the rest
        timeout = min(READ_THROUGH_TIMEOUT, (deadline - time.monotonic()) / 3)
        if timeout <= 0.05:
            return
        await state.read_through(RESOURCE_CLAIM_TEMPLATE, namespace, name, timeout)


@frozen_dataclass(eq=False)  # compared by identity: the settings hold mappings
class ProfileQuotaPolicy(Battery):
    id: PolicyId
    source: SourceRef
    match: MatchSpec
    failure_policy: FailurePolicy
    action: Action
    settings: QuotaSettings
    ledger: ReservationLedger  # outlives this policy object: reloads keep the reservations in flight
    shared: SharedReservations  # what other replicas reserved, and where this one records its admissions
    usage: UsageIndex  # per-profile totals under this policy's counting rules
    annotations: Mapping[str, str] = field(default_factory=dict)
    phases = frozenset({Phase.VALIDATE})
    limits: LimitsMemo = field(init=False, repr=False)  # per namespace, as the state's objects say
    any_namespace: MatchSpec = field(init=False, repr=False)  # `match` without its namespace selector

    def __post_init__(self) -> None:
        object.__setattr__(self, "limits", LimitsMemo(self.settings))
        object.__setattr__(self, "any_namespace", replace(self.match, namespace_selector=MATCH_ALL))

    def matches(self, request: AdmissionRequest, obj: Mapping[str, Any] | None, ctx: EvalContext) -> bool:
        if self.match.matches(request, obj, ctx):
            return True
        # a namespace the state does not know has no labels to say whether it is a profile: it is not skipped
        # (validate refuses it, or reports it under failurePolicy Ignore). Offline (`apply`, `test`) a namespace
        # the snapshot lacks does not exist: there the resource is a skip, as in `kyverno apply`
        return (ctx.namespace is None and not ctx.offline and bool(request.namespace)
                and self.any_namespace.matches(request, obj, ctx))

    async def validate(self, request: AdmissionRequest, obj: Mapping[str, Any], ctx: EvalContext) -> ValidationOutcome:
        if request.operation not in OPERATIONS or not request.namespace:
            return ValidationOutcome()
        if ctx.namespace is None and not ctx.offline:
            return self._unknown_namespace(request, ctx)
        limits = self.limits.resolve(ctx.namespace, request.namespace, ctx.state)
        if limits.unlimited:
            return ValidationOutcome((skipped(self.id, "quota", f"profile {request.namespace!r} has no limits"),),
                                     limits.notes)
        unknown = self._unknown_accelerators(request, obj)
        if unknown:
            return ValidationOutcome((failed(self.id, "accelerators", unknown, self.action),))
        subject, full = _subject_object(request, obj)
        problem = out_of_range(subject.kind, full)
        if problem is not None:
            return ValidationOutcome((failed(self.id, "quantities", problem, self.action),))
        if subject.kind in CONTROLLER_KINDS:
            view = ProfileObjects.read(ctx.state, request.namespace)
            outcomes = await asyncio.to_thread(judge_controller, self.settings, limits, view, subject.kind, subject.name,
                                               full)
            return ValidationOutcome(self._outcome_results(outcomes), limits.notes)
        if subject.kind == POD and not ctx.background and not ctx.offline:
            await read_missing_templates(ctx.state, request.namespace, full, ctx.deadline)
        previous = request.old_object if request.operation == "UPDATE" else None
        prior = None if request.operation == "UPDATE" and previous is None else (previous,)  # None: no oldObject
        namespace, ledger = request.namespace, self.ledger
        authored = self._scheduler_claim(request, full, ctx)

        async def judge(holds: tuple[Hold, ...]) -> Ruling[Decision]:
            """The decision with other replicas' `holds` counted, and what to hold for it."""
            profile = None
            if not ctx.background:  # a scan judges each object against its elders: recounted (off the request path)
                profile = self.usage.current(ctx.state, namespace)
                if profile is None:  # the first count of a profile is O(its objects): off the event loop, once
                    profile = await asyncio.to_thread(self.usage.profile, ctx.state, namespace)
            # what is in flight is asked of what this decision counts, after it was brought up to date: the state
            # can show an object its listener has not reported to the index yet, and it must not count as neither
            counted: CountedObjects = ctx.state if profile is None else IndexedObjects(profile, ctx.state)
            pending = ledger.pending(namespace, counted)
            holds = tuple(h for h in without_its_pod(holds, subject.kind, full) if not hold_shown(counted, namespace, h))
            if profile is None:
                decision = await self._recount(ctx, limits, subject, full, pending, prior, holds)
            else:
                decision = self._decide(profile, pending, subject, full, prior, limits, holds)
            admitted = not decision.exceeded or self.action is Action.AUDIT
            if not (admitted and decision.adds):
                return Ruling(decision, None)
            # a dry run is judged as the real request would be, and holds nothing
            return Ruling(decision, hold_of(subject.kind, subject.name, full, previous, decision.added, request.uid),
                          record=not ctx.dry_run)

        async with ledger.lock(namespace):
            ruling = await judge(())
            scope = None
            if ruling.hold is not None and not ctx.background:
                # other replicas decide for this profile too: record the admission where they read it, counting theirs
                scope = HoldScope(self.id.name, namespace, ledger.uids(namespace), self.settings.reservation_seconds,
                                  ctx.deadline)
                ruling = await self.shared.hold(scope, ruling, judge)
            rollbacks: tuple[Callable[[], None], ...] = ()
            if ruling.hold is not None and ruling.record:
                reservation = ledger.reserve(namespace, full, ctx.state, self.settings.reservation_seconds, previous)
                rollbacks = (functools.partial(self._roll_back, reservation, scope, ruling.hold),)
            if authored is not None:
                admitted = not ruling.decision.exceeded or self.action is Action.AUDIT
                if admitted and not ctx.dry_run:
                    rollbacks += (authored,)  # another policy may still deny the claim
                else:
                    authored()
        decision = ruling.decision
        return ValidationOutcome(self._results(decision), decision.notes, rollbacks)

    def _roll_back(self, reservation: Reservation, scope: HoldScope | None, hold: Hold) -> None:
        """The request was denied after all: release what this process holds, and withdraw what it shared."""
        self.ledger.release(reservation)
        if scope is not None:
            self.shared.withdraw(scope, hold)

    def _scheduler_claim(self, request: AdmissionRequest, claim: Mapping[str, Any], ctx: EvalContext) -> Callable[[], None] | None:
        """The scheduler's own CREATE of a KEP-5004 claim: recorded (before the decision, which then charges it as
        the scheduler's), and the way to take the record back. Only the review's userInfo tells who sent it."""
        if request.operation != "CREATE" or request.kind.kind != RESOURCE_CLAIM or ctx.background \
                or request.user.username not in self.settings.scheduler_usernames or not marked_extended(claim):
            return None
        meta = claim.get("metadata") or {}
        refs = [r for r in meta.get("ownerReferences") or () if isinstance(r, Mapping) and r.get("controller")]
        authored = AuthoredClaim(request.namespace, str(meta.get("name", "")), str(meta.get("uid") or ""),
                                 str(refs[0].get("uid") or "") if len(refs) == 1 else "")
        state = ctx.state

        def exists(other: AuthoredClaim) -> bool:
            found = state.get(RESOURCE_CLAIM, other.namespace, other.name)
            return found is not None and (found.get("metadata") or {}).get("uid") == other.uid

        authors = self.ledger.claim_authors
        if not authors.record(authored, exists):
            return None
        return functools.partial(authors.forget, authored.namespace, authored.name, authored.uid)

    def _decide(self, profile: ProfileUsage, pending: tuple[Reservation, ...], subject: Subject, full: Mapping[str, Any],
                previous: tuple[Mapping[str, Any] | None] | None, limits: Any, holds: tuple[Hold, ...] = ()) -> Decision:
        """The reservations, then the object as it was (`previous`, None: absent), then the request, laid over the
        totals; other replicas' `holds` beside them."""
        layers = [(r.key.kind, r.key.name, r.object) for r in pending
                  if r.key.kind in COUNTED_KINDS and r.key.namespace == profile.namespace]
        if not layers and not holds and previous is not None and previous[0] is None and subject.kind == POD:
            # a pod created with nothing in flight: usually no other charge reads it, and its own charge is the change
            projected = profile.project_pod(subject.name, full)
            if projected is not None:
                return decide_usage(self.settings, limits, projected[0], projected[1], frozenset(), subject)
        reserved = {(kind, name) for kind, name, _ in layers}
        key = (subject.kind, subject.name)
        if previous is not None:
            layers.append((*key, previous[0]))
            reserved.discard(key)
        journal: dict[tuple[str, str], Any] = {}
        with profile.laid_over(layers):
            base = profile.usage()
            # the request's charge is kept: the standalone state records this very pod if it is admitted
            with profile.laid_over([(*key, full)], journal, spare=True):
                before: Usage = KnownUsage(Before(profile.charges, journal), base.known_gpus, base.known_storage,
                                           base.known_unbounded)
                after: Usage = profile.usage()
                if holds:
                    extra = hold_charges(holds, lambda k: k in before.charges or k in after.charges)
                    before, after = with_charges(before, extra), with_charges(after, extra)
                    reserved.update(extra)
                return decide_usage(self.settings, limits, before, after, reserved, subject)

    async def _recount(self, ctx: EvalContext, limits: Any, subject: Subject, full: Mapping[str, Any],
                       pending: tuple[Reservation, ...], previous: tuple[Mapping[str, Any] | None] | None,
                       holds: tuple[Hold, ...] = ()) -> Decision:
        """Counted from scratch: for background scans, and for a state that cannot report its changes."""
        view = ProfileObjects.read(ctx.state, full["metadata"]["namespace"], pending)
        whole = None
        if ctx.background and view.get(subject.kind, subject.name) is not None:
            # a scan re-checks what exists: judged against older objects only, so the excess of an
            # over-quota profile is blamed once, on the newest objects, not on every object in turn
            whole, view = view, view.created_before(subject.kind, subject.name)
        before = view if previous is None else view.with_object(subject.kind, subject.name, previous[0])
        after = view.with_object(subject.kind, subject.name, full)
        extra = hold_charges(holds, lambda k: before.get(*k) is not None or after.get(*k) is not None)
        return await asyncio.to_thread(decide, self.settings, limits, before, after, subject, whole, extra)

    def _unknown_accelerators(self, request: AdmissionRequest, obj: Mapping[str, Any]) -> str:
        if request.operation != "CREATE":
            return ""  # resources and claim specs are fixed at creation (in-place resize keeps extended resources)
        rule, kind = self.settings.accelerators, request.kind.kind
        if kind in (RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE):
            spec = obj.get("spec") or {}
            classes = requested_classes(spec.get("spec") if kind == RESOURCE_CLAIM_TEMPLATE else spec)
            unknown = rule.unknown_classes(classes, self.settings.rules.device_classes) if classes else []
            return unknown_class_message(unknown) if unknown else ""
        if kind != POD:
            return ""
        names = pod_resource_names(obj)
        if not names:
            return ""  # no extended resource at all (most pods, and every pod whose GPUs became claims)
        unknown = rule.unknown(names, self.settings.rules.legacy)
        return unknown_message(unknown, "spec.gpus") if unknown else ""

    def _unknown_namespace(self, request: AdmissionRequest, ctx: EvalContext) -> ValidationOutcome:
        if ctx.background:
            return ValidationOutcome((skipped(self.id, "namespace", f"namespace {request.namespace!r} is not in the state"),))
        message = (f"the quota webhook does not know namespace {request.namespace!r} yet (it is not in its cluster "
                   f"state), so it cannot tell whether it is a profile or what its limits are; try again in a moment, "
                   f"and tell the platform team if this persists")
        fail_closed = self.failure_policy is FailurePolicy.FAIL
        return ValidationOutcome((errored(self.id, "namespace", message, Action.ENFORCE if fail_closed else Action.AUDIT),))

    def _results(self, decision: Decision) -> tuple[RuleResult, ...]:
        return self._outcome_results(decision.outcomes)

    def _outcome_results(self, outcomes: tuple[RuleOutcome, ...]) -> tuple[RuleResult, ...]:
        # a list made into a tuple costs less than a generator for one or two outcomes
        return tuple([failed(self.id, o.rule, o.message, self.action, summary=o.summary) if o.exceeded
                      else passed(self.id, o.rule, o.message) for o in outcomes])


def compile_quota(doc: Mapping[str, Any], header: PolicyHeader, env: CompileEnv,
                  ledgers: ReservationLedgers) -> ProfileQuotaPolicy:
    spec = doc["spec"]
    ledger = ledgers.for_policy(header.id.name)
    settings = compile_settings(spec)
    settings = replace(settings, rules=replace(settings.rules, scheduler_claims=ledger.claim_authors))
    return ProfileQuotaPolicy(
        id=header.id,
        source=header.source,
        match=compile_match(spec, env.cel, KINDS, OPERATIONS, default_namespace_selector=DEFAULT_PROFILE_SELECTOR),
        failure_policy=failure_policy(spec),
        action=action(spec),
        settings=settings,
        ledger=ledger,
        shared=ledgers.shared,
        usage=UsageIndex(settings.rules),
        annotations=header.annotations,
    )


KIND = PolicyKind(API_VERSION, KIND_NAME, SCHEMA)


def document_kind(ledgers: ReservationLedgers) -> DocumentKind:
    return DocumentKind(KIND, functools.partial(compile_quota, ledgers=ledgers))
