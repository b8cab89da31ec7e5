"""Run the matching policies of one phase and turn their outcomes into a verdict.

The failure policy is applied here and only here: a policy that raises, times out, whose matcher
cannot decide, or that did not compile yields an `error` result, enforced when the policy says Fail
and reported when it says Ignore.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import types
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Coroutine, Generator, Mapping, Sequence, TypeVar

from webhook.engine.verdicts import report_ref, verdict_of
from webhook.model import patch as jsonpatch
from webhook.model.cluster import ClusterState, ObjectKey, StateRefused
from webhook.model.deadline import answering_by
from webhook.model.jsoncopy import clone
from webhook.model.lookups import Lookups
from webhook.model.policy import CompiledPolicy, EvalContext, FailurePolicy, Phase, ValidationOutcome
from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Action, RuleResult, errored
from webhook.model.review import AdmissionRequest
from webhook.model.verdict import Verdict, deny
from webhook.policy.snapshot import PolicyStore
from webhook.reports.sink import ResultSink
from webhook.state.overlay import OverlaidState

log = logging.getLogger(__name__)
T = TypeVar("T")

_ALLOWED = Verdict(allowed=True)
DEFAULT_BUDGET = 9.0  # seconds, when the API server did not say: a margin under its default webhook timeout
CREATE_TIMEOUT = 3.0
# each_within's switch, read once at import (docs/fast-paths.md)
STEPPED = os.environ.get("QUARTERMASTER_STEPPED_POLICIES", "1").strip().lower() not in ("0", "false", "off", "no")


@frozen_dataclass(dict_init=True)
class MutateResult:
    verdict: Verdict
    object: Mapping[str, Any] | None  # the mutated object (the original when denied or unchanged)
    created: tuple[Mapping[str, Any], ...] = ()  # what the mutation needed created, for `apply` to print
    # each policy that ran and the object after it, denied or not (`test` compares per policy, as kyverno test)
    steps: tuple[tuple[CompiledPolicy, Mapping[str, Any]], ...] = ()


@dataclass
class _Collected:
    results: list[RuleResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    rollbacks: list[Callable[[], None]] = field(default_factory=list)
    creates: list[Mapping[str, Any]] = field(default_factory=list)
    generates: list[Mapping[str, Any]] = field(default_factory=list)


def _action(policy: CompiledPolicy) -> Action:
    return Action.ENFORCE if policy.failure_policy is FailurePolicy.FAIL else Action.AUDIT


def _failure(policy: CompiledPolicy, what: str, exc: BaseException) -> RuleResult:
    reason = "timed out" if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) else f"{type(exc).__name__}: {exc}"
    return errored(policy.id, what, f"policy {policy.id} could not be evaluated ({reason})", _action(policy))


def _unsynced(policy: CompiledPolicy) -> RuleResult:
    return errored(policy.id, "state", f"policy {policy.id} cannot decide: the cluster state is not synced with the "
                                       "Kubernetes API yet (or lost it); try again shortly", _action(policy))


def _broken(policy: CompiledPolicy) -> RuleResult:
    return errored(policy.id, "compile", f"policy {policy.id} does not compile ({policy.error}); fix it in "
                                         f"{policy.source}", _action(policy))


async def each_within(deadline: float, items: Sequence[T], step: Callable[[T], Coroutine[Any, Any, None]],
                      timed_out: Callable[[T, BaseException], None]) -> None:
    """`step` each item in order, each bounded by the deadline (loop time): a step that waits past it
    fails with a timeout, and the later ones still get their turn. A step that finishes without waiting
    (every CEL policy, most batteries) has nothing a deadline could cut short, so the timeout context,
    which cost more than most policies do, is only set up once a step actually waits.
    `QUARTERMASTER_STEPPED_POLICIES=0` sets it up for every step (`_each_within_awaited`, the reference)."""
    if not STEPPED:
        await _each_within_awaited(deadline, items, step, timed_out)
        return
    for item in items:
        running = step(item)
        try:
            waiting_on = running.send(None)
        except StopIteration:
            continue
        within = asyncio.timeout_at(deadline)
        try:
            async with within:
                await _resume(running, waiting_on)
        except TimeoutError as exc:
            if not within.expired():  # the step's own error, not the deadline
                raise
            timed_out(item, exc)


async def _each_within_awaited(deadline: float, items: Sequence[T], step: Callable[[T], Coroutine[Any, Any, None]],
                               timed_out: Callable[[T, BaseException], None]) -> None:
    """each_within as plain asyncio says it: every step awaited inside its own timeout context."""
    for item in items:
        within = asyncio.timeout_at(deadline)
        try:
            async with within:
                await step(item)
        except TimeoutError as exc:
            if not within.expired():
                raise
            timed_out(item, exc)


@types.coroutine
def _resume(running: Coroutine[Any, Any, Any], waiting_on: Any) -> Generator[Any, Any, Any]:
    """The rest of a coroutine that already yielded `waiting_on` once, as `await running` would go on: what
    it waits on goes to the task, what the task sends or throws (a cancellation) goes back into it."""
    while True:
        try:
            sent = yield waiting_on
        except GeneratorExit:
            running.close()
            raise
        except BaseException as exc:
            try:
                waiting_on = running.throw(exc)
            except StopIteration as done:
                return done.value
        else:
            try:
                waiting_on = running.send(sent)
            except StopIteration as done:
                return done.value


def _collect(outcome: ValidationOutcome, out: _Collected) -> None:
    out.results.extend(outcome.results)
    if outcome.warnings or outcome.rollbacks or outcome.generates:
        out.warnings.extend(outcome.warnings)
        out.rollbacks.extend(outcome.rollbacks)
        out.generates.extend(outcome.generates)


class AdmissionEngine:
    def __init__(self, store: PolicyStore, state: ClusterState, sink: ResultSink | None = None,
                 on_result: Callable[[RuleResult], None] | None = None, lookups: Lookups | None = None,
                 on_deleted: Callable[[ObjectKey], Any] | None = None, force_audit: bool = False) -> None:
        self.force_audit = force_audit  # serve --force-audit: every failure is reported and warned, none blocks
        self.store = store
        self.state = state
        self.sink = sink
        self.on_result = on_result
        # told of every admitted DELETE: quota reservations for the object end there (see ReservationLedgers)
        self.on_deleted = on_deleted
        self.lookups = lookups if lookups is not None else state.lookups

    def _context(self, request: AdmissionRequest, background: bool = False,
                 budget: float = DEFAULT_BUDGET, offline: bool = False, state: ClusterState | None = None) -> EvalContext:
        state = self.state if state is None else state
        namespace = state.get("Namespace", "", request.namespace) if request.namespace else None
        return EvalContext(state=state, namespace=namespace, dry_run=request.dry_run, lookups=self.lookups,
                           request=request, background=background, deadline=time.monotonic() + budget, offline=offline)

    def _applies(self, policy: CompiledPolicy, request: AdmissionRequest, obj: Mapping[str, Any] | None,
                 ctx: EvalContext, out: _Collected, synced: bool = True) -> bool:
        if policy.error is not None:
            # a namespaced policy is a tenant's: broken, it answers for its own namespace only, or one tenant's
            # typo would deny every request of the cluster with its failure policy
            if policy.id.namespace and request.namespace != policy.id.namespace:
                return False
            out.results.append(_broken(policy))
            return False
        if not synced:
            # a stale or empty cache would make wrong decisions (a profile's namespace unknown: its quota skipped);
            # the policy's failurePolicy decides, as for any policy that cannot be evaluated
            out.results.append(_unsynced(policy))
            return False
        try:
            return policy.matches(request, obj, ctx)
        except Exception as exc:
            out.results.append(_failure(policy, "match", exc))
            return False

    # --- mutate ------------------------------------------------------------------------------------
    async def mutate(self, request: AdmissionRequest, budget: float = DEFAULT_BUDGET) -> MutateResult:
        # the deadline reaches the evaluators' cost meters, which stop a CEL or JMESPath evaluation past it
        with answering_by(time.monotonic() + budget):
            return await self._mutate(request, budget)

    async def _mutate(self, request: AdmissionRequest, budget: float) -> MutateResult:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + budget
        policies = self.store.snapshot.policies_for(Phase.MUTATE)
        if request.object is None or not policies:
            return MutateResult(_ALLOWED, request.object)
        ctx = self._context(request, budget=budget)
        synced = self.state.synced
        # request.object is never changed: a policy that edits in place gets its own copy (and a failure
        # half-way leaves `obj` as it was); one that says `copies_input` builds a new object itself
        obj: dict[str, Any] = dict(request.object)
        out = _Collected()
        applied: list[tuple[CompiledPolicy, dict[str, Any]]] = []

        async def step(policy: CompiledPolicy) -> None:
            nonlocal obj
            if self._applies(policy, request, obj, ctx, out, synced):
                obj = await self._mutate_with(policy, request, obj, ctx, out)
                applied.append((policy, obj))

        async def again(ran: tuple[CompiledPolicy, dict[str, Any]]) -> None:
            # reinvocationPolicy IfNeeded, as the API server does it: one more run for a policy whose
            # output a later policy changed
            nonlocal obj
            policy, after = ran
            if policy.traits.reinvoke and after != obj and self._applies(policy, request, obj, ctx, out):
                obj = await self._mutate_with(policy, request, obj, ctx, out)

        def timed_out(policy: CompiledPolicy, exc: BaseException) -> None:
            self._failed(policy, "mutate", request, exc, out)  # the object stays as it was before the policy

        await each_within(deadline, policies, step, timed_out)
        if not applied and not out.results:
            return MutateResult(_ALLOWED, request.object)  # nothing applied: nothing to report, patch or create
        if any(p.traits.reinvoke for p, _ in applied):
            await each_within(deadline, list(applied), again, lambda ran, exc: timed_out(ran[0], exc))
        verdict = self._verdict(request, out)
        if not verdict.allowed:
            return MutateResult(verdict, request.object, steps=tuple(applied))
        if request.dry_run and out.creates:
            refused = await self._judged_as_created(request, obj, out.creates, deadline)
            if refused is not None:
                return MutateResult(refused, request.object, steps=tuple(applied))
        failed_create = await self._create(request, out.creates, deadline)
        if failed_create is not None:
            return MutateResult(failed_create, request.object, steps=tuple(applied))
        patch = tuple(jsonpatch.diff(request.object, obj))
        return MutateResult(replace(verdict, patch=patch), obj, tuple(out.creates), tuple(applied))

    async def _mutate_with(self, policy: CompiledPolicy, request: AdmissionRequest, obj: dict[str, Any],
                           ctx: EvalContext, out: _Collected) -> dict[str, Any]:
        """One mutating policy on the object so far; a failure is a result and leaves the object as it was."""
        try:
            given = obj if policy.traits.copies_input else clone(obj)
            outcome = await policy.mutate(request, given, ctx)
        except Exception as exc:
            self._failed(policy, "mutate", request, exc, out)
            return obj
        out.results.extend(outcome.results)
        out.warnings.extend(outcome.warnings)
        out.creates.extend(outcome.creates)
        return dict(outcome.object)

    @staticmethod
    def _failed(policy: CompiledPolicy, what: str, request: AdmissionRequest, exc: BaseException, out: _Collected) -> None:
        log.warning("%s policy %s failed: %s", "mutating" if what == "mutate" else "validating", policy.id, exc,
                    extra={"uid": request.uid, "policy": str(policy.id)})
        out.results.append(_failure(policy, what, exc))

    async def _judged_as_created(self, request: AdmissionRequest, obj: Mapping[str, Any],
                                 creates: Sequence[Mapping[str, Any]], deadline: float) -> Verdict | None:
        """A dry run's mutated object judged now, by the validating policies, with what its mutation would have
        created laid over the state: the validating call cannot see those objects (a dry run creates nothing), and
        would admit what the real request is refused (a pod whose claim template counts nothing while it does not
        exist). The refusal, or None; nothing is reported here (the validating call reports)."""
        judged = replace(request, object=obj)
        budget = max(0.1, deadline - asyncio.get_running_loop().time())
        verdict = await self._validate(judged, budget, False, False, OverlaidState(self.state, creates), report=False)
        return None if verdict.allowed else verdict

    async def _create(self, request: AdmissionRequest, objects: Sequence[Mapping[str, Any]], deadline: float) -> Verdict | None:
        if request.dry_run:
            return None
        loop = asyncio.get_running_loop()
        for obj in objects:
            try:
                await self.state.create(obj, timeout=max(0.1, min(CREATE_TIMEOUT, deadline - loop.time())))
            except StateRefused as exc:
                # the API server's own answer (a quota, a policy, RBAC): final, and the user's to read
                log.info("creating %s refused: %s", ObjectKey.of(obj), exc, extra={"uid": request.uid})
                return deny(f"{ObjectKey.of(obj)}, which this {request.kind.kind} needs, was refused: {exc}", code=403)
            except Exception as exc:
                log.error("could not create %s: %s", ObjectKey.of(obj), exc, extra={"uid": request.uid})
                return deny(f"Quartermaster could not create {ObjectKey.of(obj)} that this {request.kind.kind} needs "
                            f"({exc}); try again in a minute, and tell the platform team if it persists", code=503)
        return None

    # --- validate ----------------------------------------------------------------------------------
    async def validate(self, request: AdmissionRequest, budget: float = DEFAULT_BUDGET, *,
                       background: bool = False, offline: bool = False) -> Verdict:
        """`background`: a scan of an existing object; only policies that take part in background scans run.
        `offline`: `apply` or `test`, not an admission the API server asked for (EvalContext.offline)."""
        with answering_by(time.monotonic() + budget):
            return await self._validate(request, budget, background, offline)

    async def _validate(self, request: AdmissionRequest, budget: float, background: bool, offline: bool,
                        state: ClusterState | None = None, report: bool = True) -> Verdict:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + budget
        policies = self.store.snapshot.policies_for(Phase.VALIDATE)
        obj = request.object if request.object is not None else request.old_object
        ctx = self._context(request, background, budget, offline, state)
        synced = background or ctx.state.synced  # a scan runs on what the cache holds
        out = _Collected()
        todo = [p for p in policies if p.background] if background else policies
        subject = obj or {}

        async def step(policy: CompiledPolicy) -> None:
            # one coroutine per policy besides the policy's own: with a score of policies, layers add up
            if not self._applies(policy, request, request.object, ctx, out, synced):
                return
            try:
                outcome = await policy.validate(request, subject, ctx)
            except Exception as exc:
                self._failed(policy, "validate", request, exc, out)
                return
            _collect(outcome, out)

        def timed_out(policy: CompiledPolicy, exc: BaseException) -> None:
            self._failed(policy, "validate", request, exc, out)  # the deadline passing is one more way to fail

        await each_within(deadline, todo, step, timed_out)
        try:
            verdict = self._verdict(request, out, report)
            if not verdict.allowed:
                for rollback in out.rollbacks:
                    rollback()
                return verdict
            if request.dry_run:
                return verdict
            self._record(request)
        except BaseException:  # an answer that is not an admission must not leave reservations behind
            for rollback in out.rollbacks:
                rollback()
            raise
        if not out.generates:  # nothing to generate (most admissions): the verdict as it is, not a copy of it
            return verdict
        return replace(verdict, generated=await self._generate(request, out.generates, deadline))

    async def _generate(self, request: AdmissionRequest, objects: Sequence[Mapping[str, Any]],
                        deadline: float) -> tuple[Mapping[str, Any], ...]:
        """After admission: a failure cannot undo the admitted request, so it is logged, not denied."""
        loop = asyncio.get_running_loop()
        done = []
        for obj in objects:
            try:
                # stored as the API server would (uid, resourceVersion; the standalone state keeps no Secret
                # data), reported as the policy generated it: what `apply` prints and `test` compares
                await self.state.create(obj, timeout=max(0.1, min(CREATE_TIMEOUT, deadline - loop.time())))
                done.append(obj)
            except Exception as exc:
                log.error("could not create generated %s: %s", ObjectKey.of(obj), exc, extra={"uid": request.uid})
        return tuple(done)

    def _record(self, request: AdmissionRequest) -> None:
        if request.operation == "DELETE":
            self.state.record_deleted(request.kind.kind, request.namespace, request.name, request.options)
            if self.on_deleted is not None:
                self.on_deleted(ObjectKey(request.kind.kind, request.namespace, request.name))
        elif request.operation in ("CREATE", "UPDATE") and request.object is not None:
            obj = request.object
            meta = obj.get("metadata")
            if not ("kind" in obj and "apiVersion" in obj and type(meta) is dict
                    and (not request.namespace or "namespace" in meta) and (not request.name or "name" in meta)):
                # the object leaves out what the request says: filled in on copies of the two levels written
                obj = dict(obj)
                meta = dict(meta or {})
                if request.namespace:
                    meta.setdefault("namespace", request.namespace)
                if request.name:
                    meta.setdefault("name", request.name)
                obj["metadata"] = meta
                obj.setdefault("kind", request.kind.kind)
                obj.setdefault("apiVersion", request.kind.api_version)
            # otherwise the request's own object (most objects): the state keeps copies of what it stores
            self.state.record_admitted(obj, request.operation)

    # --- verdict -----------------------------------------------------------------------------------
    def _verdict(self, request: AdmissionRequest, out: _Collected, report: bool = True) -> Verdict:
        results = tuple(out.results)
        if self.force_audit:
            results = tuple(replace(r, action=Action.AUDIT) if r.blocks else r for r in results)
        if report:
            self._report(request, results)
        return verdict_of(results, out.warnings)

    def _report(self, request: AdmissionRequest, results: tuple[RuleResult, ...]) -> None:
        if self.on_result:
            for r in results:
                self.on_result(r)
        if self.sink and results:
            self.sink.submit(report_ref(request), results)
