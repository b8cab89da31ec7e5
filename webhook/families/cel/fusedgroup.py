"""One CEL program for all the fast-path ValidatingPolicies that a request matches.

The engine asks policies one at a time. The first member of a group it asks about a request evaluates
the fused programs (webhook.families.cel.fused) of every member that matches the request, joined into
one list `[p1, p2, ...]`, in one runtime call, and leaves the decisions in the request's EvalContext
memo for the others: one call per request instead of one per policy.

Exactness: each element is the member's own fused program (its own `cel.bind` scopes), so its value is
the one that program gives alone. A list is an error when any element is one; then no decision is
taken from the group and every member takes its own path (its own fused program, then the reference).
Evaluating a member early changes nothing: the programs are pure (no lookups, no effects), and a
member whose turn never comes (the engine stops asking) only costs time. Members: ValidatingPolicies
without exceptions whose matching reads only the request's resource and operation (see `static_key`),
so which members a request matches is fixed per (resource, operation, background scan): a `Plan`,
compiled once. The runtime's comprehension budget covers the joined program as a whole: a plan whose
program keeps failing (budget, errors of one member) rests for a while and its members go their own way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from webhook.cel import CelCompiler
from webhook.families.cel import fused
from webhook.families.cel.base import NO_EXCEPTIONS, request_key, shared_activation
from webhook.families.cel.validating import ValidatingPolicy
from webhook.model.policy import EvalContext
from webhook.model.review import AdmissionRequest

_MEMO = "cel-family.group"  # this module's entries in the request's EvalContext memo
MAX_PLANS = 64     # (resource, operation, scan) combinations remembered
GIVE_UP = 8        # failing evaluations in a row after which a plan rests ...
REST = 256         # ... for this many requests


@dataclass(eq=False)
class Plan:
    members: tuple[tuple[int, fused.Fused], ...]  # (id(policy), the fast path of the variant it matched)
    program: Any  # CelProgram of the joined list, or None (fewer than two members; did not compile)
    budget: float = 0.0  # the members' smallest timeoutSeconds (see fused.run)
    failures: int = 0
    resting: int = 0

    def __post_init__(self) -> None:
        # per member: its id and what each value of its program decides (fused.REFERENCE: the reference
        # path builds the result)
        self.tables = tuple((member, {code: fused.REFERENCE if outcome is None else outcome
                                      for code, outcome in program.outcomes.items()})
                            for member, program in self.members)


class FusedGroup:
    def __init__(self, members: Sequence[ValidatingPolicy], cel: CelCompiler) -> None:
        self.members = tuple(members)
        self.cel = cel
        self._plans: dict[tuple[Any, ...], Plan] = {}
        self._memo_key = (_MEMO, id(self))

    def outcome(self, policy: ValidatingPolicy, request: AdmissionRequest, ctx: EvalContext) -> Any:
        """The policy's outcome as the group decided it, fused.REFERENCE, or None (not decided here)."""
        found = ctx.memo.get(self._memo_key)
        if found is None or found[0] is not request:
            try:
                decided = self._decide(request, ctx)
            except Exception:  # nothing decided here: a member's own path (and the reference) will tell
                decided = {}
            found = ctx.memo[self._memo_key] = (request, decided)
        return found[1].get(id(policy))

    def _decide(self, request: AdmissionRequest, ctx: EvalContext) -> dict[int, Any]:
        plan = self._plan(request, ctx)
        if plan.program is None:
            return {}
        if plan.resting:
            plan.resting -= 1
            return {}
        shared = fused.activation(ctx, request.object, NO_EXCEPTIONS.allowed, shared_activation)
        try:
            codes = fused.run(plan.program, shared, plan.budget)
        except Exception:  # one member's error (or the budget): each member goes its own way
            plan.failures += 1
            if plan.failures >= GIVE_UP:
                plan.failures, plan.resting = 0, REST
            return {}
        plan.failures = 0
        if type(codes) is not list or len(codes) != len(plan.tables):
            return {}
        # each element is one of its program's int literals (no error reached here): its table has it
        return {member: table.get(code) for (member, table), code in zip(plan.tables, codes)}

    def _plan(self, request: AdmissionRequest, ctx: EvalContext) -> Plan:
        key = (request_key(request, ctx), ctx.background)
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= MAX_PLANS:  # requests name resources freely: keep it bounded
                self._plans.clear()
            plan = self._plans[key] = self._build(request, ctx)
        return plan

    def _build(self, request: AdmissionRequest, ctx: EvalContext) -> Plan:
        members, budget = [], float("inf")
        for policy in self.members:
            if ctx.background and not policy.background:
                continue  # a background scan does not run it
            variant = policy.variant_for(request, request.object, ctx)
            fast = policy.fast_path(variant) if variant is not None else None
            if fast is not None and (not members or fast.env == members[0][1].env):
                members.append((id(policy), fast))
                budget = min(budget, policy.timeout)
        program = self._join(members)
        if program is None and len(members) >= 2:  # a member that does not compile alone spoils the list
            members = [(member, fast) for member, fast in members if fast.program is not None]
            program = self._join(members)
        return Plan(tuple(members), program, budget)

    def _join(self, members: Sequence[tuple[int, fused.Fused]]) -> Any:
        if len(members) < 2:  # one program alone is the member's own
            return None
        joined = "[" + ",\n".join(f"(\n{program.source}\n)" for _, program in members) + "]"
        return self.cel.compile_bound(joined, [], members[0][1].env, strict=True)


def attach(policies: Sequence[Any], cel: CelCompiler) -> FusedGroup | None:
    """Join the eligible ValidatingPolicies of one compiled set into a group (each learns its group)."""
    members = [p for p in policies if isinstance(p, ValidatingPolicy) and p.error is None and p.admission
               and not p.exceptions and not p.id.namespace and p.static_match]
    if len(members) < 2:
        return None
    group = FusedGroup(members, cel)
    for policy in members:
        policy.group = group
    return group
