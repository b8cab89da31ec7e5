"""Trim checking: every fused program that runs (a group's joined program on its trimmed activation, or a
policy's own program, which runs on the whole request) is also run on the other form of the activation,
the whole and the trimmed one (webhook.families.cel.fused.trims; a group's also without the `request` variable
when its text never names it, fused.program_values): the value must be the same, or an error in both cases.

And every value a joined program's Python form gives (webhook.cel.to_python; the runtime is not asked then)
must be the runtime's own value of that program, on the whole activation and on the trimmed one: the same
value of the same types (an int is no bool)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator

from webhook.cel import Activation, CelError
from webhook.cel.to_python import NOT_TOLD, Refused
from webhook.cel.trim import trimmed as trim_values
from webhook.families.cel import fused
from webhook.families.cel.fusedgroup import FusedGroup


@dataclass
class TrimCheck:
    compared: int = 0
    trimmed: int = 0  # comparisons where something was trimmed
    python: int = 0  # values of joined programs' Python forms compared with the runtime's
    mismatches: list[tuple[Any, Any, Any]] = field(default_factory=list)


def outcome(program: Any, shared: Activation) -> tuple[str, Any]:
    try:
        return "value", program.evaluate_strict(shared)
    except CelError:
        return "error", None


def typed(value: Any) -> Any:
    """`value` with every part tagged by its type: equal only when the types are too (True == 1 in Python)."""
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    if isinstance(value, dict):
        return ("map", {k: typed(v) for k, v in value.items()})
    return (type(value).__name__, value)


CURRENT: list[TrimCheck] = []  # the checks running now (a test may read its counts)


@contextlib.contextmanager
def trim_checked() -> Iterator[TrimCheck]:
    check = TrimCheck()
    CURRENT.append(check)
    original_decide = fused.decide
    whole_of: dict[int, tuple[Activation, Activation]] = {}  # id(trimmed) -> (it, the activation trimmed)
    whole_values: dict[int, tuple[Any, Activation]] = {}  # id(program values) -> (them, the whole activation)
    trims_of: dict[int, Any] = {}
    # id(Python form) -> (it, its joined CelProgram, the plan's trims, the members' own CelPrograms)
    parts: dict[int, tuple[Any, Any, Any, list[Any]]] = {}
    own_forms: set[int] = set()  # the Python forms of policies' own programs (checked by `decide`)

    def compare(program: Any, whole: Activation, trims: Any) -> None:
        part = Activation(trim_values(whole.values, trims)) if trims else whole
        check.compared += 1
        check.trimmed += part is not whole
        full, cut = outcome(program, whole), outcome(program, part)
        if full != cut:
            check.mismatches.append((program.expression[:200], full, cut))

    def program_values(ctx: Any, obj: Any, exceptions: Any, with_request: bool) -> Any:
        out = original_program_values(ctx, obj, exceptions, with_request)
        from webhook.families.cel.base import shared_activation

        whole_values[id(out)] = (out, fused.activation(ctx, obj, exceptions, shared_activation))  # with `request`
        return out

    def program_activation(values: Any, plans: Any) -> Activation:
        out = original_program_activation(values, plans)
        found = whole_values.get(id(values))
        if found is not None and found[0] is values:
            whole_of[id(out)] = (out, found[1])
        return out

    def run(program: Any, shared: Activation, budget: float) -> Any:
        found = whole_of.get(id(shared))
        if found is not None and found[0] is shared:  # a joined program: it runs on `shared`, trimmed from `whole`
            whole = found[1]
            check.compared += 1
            check.trimmed += shared is not whole
            full, cut = outcome(program, whole), outcome(program, shared)
            if full != cut:
                check.mismatches.append((program.expression[:200], full, cut))
        return original_run(program, shared, budget)

    def run_python(python: Any, values: Any, budget: float) -> Any:
        value = original_run_python(python, values, budget)  # Refused: the runtime runs, and `run` checks it
        if id(python) in own_forms:
            return value  # a policy's own program's Python form: `decide` below checks it
        found, whole = parts.get(id(python)), whole_values.get(id(values))
        if found is None or found[0] is not python or whole is None or whole[0] is not values:
            check.mismatches.append(("a Python form this check did not see built", value, None))
            return value
        _, program, trims, members = found
        check.python += 1
        if type(value) is list and any(v is NOT_TOLD for v in value):
            # some members' values told apart from the others': each is its member's own program's value
            for element, member in zip(value, members):
                if element is not NOT_TOLD:
                    own = outcome(member, whole[1])
                    if own[0] != "value" or typed(own[1]) != typed(element):
                        check.mismatches.append(("Python form, one member: " + member.expression[:200], own, element))
            return value
        cut = Activation(trim_values(values, trims)) if trims else Activation(values)
        check.compared += 1
        check.trimmed += bool(trims)
        full, trimmed = outcome(program, whole[1]), outcome(program, cut)
        if full != trimmed:
            check.mismatches.append((program.expression[:200], full, trimmed))
        if full[0] != "value" or typed(full[1]) != typed(value):
            check.mismatches.append(("Python form: " + program.expression[:200], full, ("python", value)))
        return value

    def decide(program: Any, shared: Activation, budget: float) -> Any:
        if program.program is not None:  # a policy's own program: as it would run trimmed
            key = id(program)
            if key not in trims_of:
                trims_of[key] = (program, fused.trims([program.program]))
            compare(program.program, shared, trims_of[key][1])
            if program.python is not None:  # its Python form: each value it tells is the runtime's
                own_forms.add(id(program.python))
                try:
                    told = original_run_python(program.python, shared.values, budget)
                except Refused:
                    told = NOT_TOLD
                if told is not NOT_TOLD:
                    check.python += 1
                    own = outcome(program.program, shared)
                    if own[0] != "value" or typed(own[1]) != typed(told):
                        check.mismatches.append(("Python form: " + program.program.expression[:200], own, told))
        return original_decide(program, shared, budget)

    def build(self: FusedGroup, request: Any, ctx: Any) -> Any:
        plan = original_build(self, request, ctx)
        for part in plan.parts:
            if part.python is not None:
                members = [self.members[slot] for slot in part.slots]
                own = [m.programs[m.variant(request, ctx)].program for m in members]
                parts[id(part.python)] = (part.python, part.program, plan.trims, own)
        return plan

    original_run, original_run_python = fused.run, fused.run_python
    original_program_values, original_program_activation = fused.program_values, fused.program_activation
    original_build = FusedGroup._build
    fused.run, fused.run_python, fused.decide = run, run_python, decide  # type: ignore[assignment]
    fused.program_values, fused.program_activation = program_values, program_activation  # type: ignore[assignment]
    FusedGroup._build = build  # type: ignore[method-assign]
    try:
        yield check
    finally:
        CURRENT.remove(check)
        fused.run, fused.run_python, fused.decide = original_run, original_run_python, original_decide  # type: ignore
        fused.program_values = original_program_values  # type: ignore[assignment]
        fused.program_activation = original_program_activation  # type: ignore[assignment]
        FusedGroup._build = original_build  # type: ignore[method-assign]
