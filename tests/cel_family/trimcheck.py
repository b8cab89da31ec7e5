"""Trim checking: every fused program that runs (a group's joined program on its trimmed activation, or a
policy's own program, which runs on the whole request) is also run on the other form of the activation,
the whole and the trimmed one (webhook.families.cel.fused.trims; a group's also without the `request` variable
when its text never names it, fused.program_activation): the value must be the same, or an error in both
cases."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator

from webhook.cel import Activation, CelError
from webhook.cel.trim import trimmed as trim_values
from webhook.families.cel import fused


@dataclass
class TrimCheck:
    compared: int = 0
    trimmed: int = 0  # comparisons where something was trimmed
    mismatches: list[tuple[Any, Any, Any]] = field(default_factory=list)


def outcome(program: Any, shared: Activation) -> tuple[str, Any]:
    try:
        return "value", program.evaluate_strict(shared)
    except CelError:
        return "error", None


CURRENT: list[TrimCheck] = []  # the checks running now (a test may read its counts)


@contextlib.contextmanager
def trim_checked() -> Iterator[TrimCheck]:
    check = TrimCheck()
    CURRENT.append(check)
    original_decide = fused.decide
    whole_of: dict[int, tuple[Activation, Activation]] = {}  # id(trimmed) -> (it, the activation trimmed)
    trims_of: dict[int, Any] = {}

    def compare(program: Any, whole: Activation, trims: Any) -> None:
        part = Activation(trim_values(whole.values, trims)) if trims else whole
        check.compared += 1
        check.trimmed += part is not whole
        full, cut = outcome(program, whole), outcome(program, part)
        if full != cut:
            check.mismatches.append((program.expression[:200], full, cut))

    def program_activation(ctx: Any, obj: Any, exceptions: Any, plans: Any, with_request: bool) -> Activation:
        out = original_program_activation(ctx, obj, exceptions, plans, with_request)
        from webhook.families.cel.base import shared_activation

        whole_of[id(out)] = (out, fused.activation(ctx, obj, exceptions, shared_activation))  # with `request`
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

    def decide(program: Any, shared: Activation, budget: float) -> Any:
        if program.program is not None:  # a policy's own program: as it would run trimmed
            key = id(program)
            if key not in trims_of:
                trims_of[key] = (program, fused.trims([program.program]))
            compare(program.program, shared, trims_of[key][1])
        return original_decide(program, shared, budget)

    original_run, original_program_activation = fused.run, fused.program_activation
    fused.run, fused.decide = run, decide  # type: ignore[assignment]
    fused.program_activation = program_activation  # type: ignore[assignment]
    try:
        yield check
    finally:
        CURRENT.remove(check)
        fused.run, fused.decide = original_run, original_decide  # type: ignore
        fused.program_activation = original_program_activation  # type: ignore[assignment]
