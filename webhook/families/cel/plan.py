"""The evaluation plan of one CEL policy set: each policy's route and why (webhook.families.cel.route),
decided when the family compiles the set and carried by each policy from then on.

Everything a route needs is built here, before any request: each variant's fused program (compiled, so
that one which does not compile is known now), its Python form, the set's fused group with the joined
programs of a request matching every member, and the folded expressions of the reference route. What stays
per request is bounded memo: which members a (resource, operation) key selects (FusedGroup's plans).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from webhook.cel import CelCompiler
from webhook.families.cel.base import CelPolicy
from webhook.families.cel.fused import Fused
from webhook.families.cel.fusedgroup import FusedGroup, Member
from webhook.families.cel.route import CelRoute, Route
from webhook.families.cel.tiers import FastPaths
from webhook.families.cel.validating import ValidatingPolicy
from webhook.model.policy import CompiledPolicy
from webhook.policy.family import CelEvaluation

FORCED = CelRoute(Route.REFERENCE, "forced: the cel evaluation setting is `reference`")


def plan(policies: Sequence[CompiledPolicy], cel: CelCompiler, evaluation: CelEvaluation) -> tuple[CompiledPolicy, ...]:
    """The set's policies, each CEL one rebuilt with its route (the others as they are)."""
    if evaluation is CelEvaluation.REFERENCE:
        return tuple(replace(p, route=FORCED) if isinstance(p, CelPolicy) else p for p in policies)
    tiers = FastPaths.from_environment()
    routes: dict[int, CelRoute] = {}
    grouped: list[tuple[int, ValidatingPolicy, tuple[Fused | None, ...]]] = []
    for index, policy in enumerate(policies):
        if not isinstance(policy, CelPolicy):
            continue
        route = own_route(policy, tiers)
        routes[index] = route
        if route.route is Route.FUSED and isinstance(policy, ValidatingPolicy) and not _outside_group(policy):
            grouped.append((index, policy, route.programs))
    if len(grouped) >= 2 and tiers.group:
        group = FusedGroup([Member(slot, p.variants, programs, p.background, p.timeout)
                            for slot, (_, p, programs) in enumerate(grouped)], cel, tiers)
        for slot, (index, _, programs) in enumerate(grouped):
            why = (f"member {slot + 1} of {len(grouped)} of the set's fused group (one program for the members a "
                   f"request matches, {_form(programs)}); what the group cannot decide goes to its own fused program, "
                   "then to the reference route")
            routes[index] = CelRoute(Route.GROUP, why, programs, group, slot)
    elif grouped:
        alone = "the group is switched off" if not tiers.group else "no other policy of the set can join it in a group"
        for index, _, _ in grouped:
            routes[index] = replace(routes[index], why=f"{routes[index].why}; {alone}")
    return tuple(replace(p, route=routes[i]) if i in routes else p for i, p in enumerate(policies))


def own_route(policy: CelPolicy, tiers: FastPaths = FastPaths()) -> CelRoute:
    """The policy's route on its own: fused where a variant has a fused program that compiles, else reference."""
    if policy.error is not None:
        return CelRoute(Route.REFERENCE, "it does not compile: its failure policy answers every request it matches")
    if not isinstance(policy, ValidatingPolicy):
        return CelRoute(Route.REFERENCE, f"a {policy.kind} is evaluated expression by expression (fused programs "
                                         "are for ValidatingPolicies)")
    if policy.exceptions:
        return CelRoute(Route.REFERENCE, "PolicyExceptions name it: they are checked per request before its validations")
    policy.fold_reference()
    programs: list[Fused | None] = []
    reasons: list[str] = []
    for variant in policy.variants:
        found = policy.fuse(variant)
        if isinstance(found, str):
            programs.append(None)
            reasons.append(found)
        elif found.program is None:
            programs.append(None)
            reasons.append("its fused program does not compile in the plain form")
        else:
            programs.append(found if tiers.python else replace(found, _python=None))
    if not any(programs):
        return CelRoute(Route.REFERENCE, f"no fused program: {reasons[0] if reasons else 'no variants'}")
    fused = tuple(programs)
    why = f"its own fused program ({_form(fused)})"
    if reasons:
        why += f"; {len(reasons)} of its {len(programs)} variants by the reference route ({reasons[0]})"
    outside = _outside_group(policy)
    if outside:
        why += f"; not in the set's fused group: {outside}"
    return CelRoute(Route.FUSED, why, fused)


def _outside_group(policy: ValidatingPolicy) -> str:
    """Why the policy cannot join the set's fused group ("" if it can): members are decided together for each
    (resource, operation) key, so only what matches on that key alone, everywhere, joins."""
    if not policy.admission:
        return "it takes no part in admission"
    if policy.id.namespace:
        return "a namespaced policy sees its own namespace only"
    if not policy.static_match:
        return "it matches on more than the resource and operation (selectors or names)"
    return ""


def _form(programs: Sequence[Fused | None]) -> str:
    """How its fused programs evaluate: in Python (webhook.cel.to_python), else in the C++ runtime."""
    built = [p for p in programs if p is not None]
    runtime = "by the C++ runtime"
    if all(p.python is not None for p in built):
        return "evaluated as Python"
    if all(p.python is None for p in built):
        return f"evaluated {runtime}"
    return f"some variants evaluated as Python, the others {runtime}"
