"""Form checking: every value a joined program's Python form gives (webhook.cel.to_python; the runtime is not
asked then) must be the runtime's own value of that program on the whole activation: the same value of the same
types (an int is no bool). And a group's joined program, which may run without the `request` variable when its
text never names it (fused.program_values), must give what it gives with it."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator

from webhook.cel import Activation, CelError
from webhook.cel.to_python import NOT_TOLD, Refused
from webhook.families.cel import fused
from webhook.families.cel.fusedgroup import FusedGroup


@dataclass
class FormCheck:
    compared: int = 0  # joined programs' values compared on the values they ran on and on the whole activation
    python: int = 0  # values of Python forms compared with the runtime's
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


CURRENT: list[FormCheck] = []  # the checks running now (a test may read its counts)


@contextlib.contextmanager
def form_checked() -> Iterator[FormCheck]:
    check = FormCheck()
    CURRENT.append(check)
    original_decide = fused.decide
    whole_values: dict[int, tuple[Any, Activation]] = {}  # id(program values) -> (them, the whole activation)
    # id(Python form) -> (it, its joined CelProgram, the members' own CelPrograms)
    parts: dict[int, tuple[Any, Any, list[Any]]] = {}
    own_forms: set[int] = set()  # the Python forms of policies' own programs (checked by `decide`)

    def program_values(ctx: Any, obj: Any, exceptions: Any, with_request: bool) -> Any:
        out = original_program_values(ctx, obj, exceptions, with_request)
        from webhook.families.cel.base import shared_activation

        whole_values[id(out)] = (out, fused.activation(ctx, obj, exceptions, shared_activation))  # with `request`
        return out

    def run_python(python: Any, values: Any, budget: float) -> Any:
        value = original_run_python(python, values, budget)  # Refused: the runtime runs
        if id(python) in own_forms:
            return value  # a policy's own program's Python form: `decide` below checks it
        found, whole = parts.get(id(python)), whole_values.get(id(values))
        if found is None or found[0] is not python or whole is None or whole[0] is not values:
            check.mismatches.append(("a Python form this check did not see built", value, None))
            return value
        _, program, members = found
        check.python += 1
        if type(value) is list and any(v is NOT_TOLD for v in value):
            # some members' values told apart from the others': each is its member's own program's value
            for element, member in zip(value, members):
                if element is not NOT_TOLD:
                    own = outcome(member, whole[1])
                    if own[0] != "value" or typed(own[1]) != typed(element):
                        check.mismatches.append(("Python form, one member: " + member.expression[:200], own, element))
            return value
        check.compared += 1
        full, given = outcome(program, whole[1]), outcome(program, Activation(values))
        if full != given:
            check.mismatches.append((program.expression[:200], full, given))
        if full[0] != "value" or typed(full[1]) != typed(value):
            check.mismatches.append(("Python form: " + program.expression[:200], full, ("python", value)))
        return value

    def decide(program: Any, shared: Activation, budget: float) -> Any:
        if program.program is not None and program.python is not None:
            own_forms.add(id(program.python))  # a policy's own program: each value its Python form tells is the runtime's
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
                parts[id(part.python)] = (part.python, part.program, own)
        return plan

    original_run_python, original_program_values = fused.run_python, fused.program_values
    original_build = FusedGroup._build
    fused.run_python, fused.decide = run_python, decide  # type: ignore[assignment]
    fused.program_values = program_values  # type: ignore[assignment]
    FusedGroup._build = build  # type: ignore[method-assign]
    try:
        yield check
    finally:
        CURRENT.remove(check)
        fused.run_python, fused.decide = original_run_python, original_decide  # type: ignore[assignment]
        fused.program_values = original_program_values  # type: ignore[assignment]
        FusedGroup._build = original_build  # type: ignore[method-assign]
