"""Shadow evaluation: every ValidatingPolicy evaluation runs through the fast path (webhook.families.cel.fused)
and through the reference path, and both results are kept for comparison. The reference result is what the
caller gets, so a test's own assertions check the reference as before. So that every evaluation goes through
here, the engine's batches (fusedgroup.FusedGroup.answers) answer for nothing: each member is asked itself
(test_group_dispatch checks the batches' answers against that)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator

from webhook.families.cel import fused, validating
from webhook.families.cel.fusedgroup import FusedGroup
from webhook.families.cel.validating import ValidatingPolicy


@dataclass
class Shadow:
    compared: int = 0
    decided: int = 0  # evaluations the fast path answered (the others fell back to the reference)
    mismatches: list[tuple[Any, Any, Any]] = field(default_factory=list)


def _prebuilt(policy: ValidatingPolicy, outcome: Any) -> bool:
    """Whether `outcome` is one the policy's fused programs built at compile time (the reference path builds
    its outcomes per evaluation)."""
    return any(outcome is built for program in policy._fused.values() if program is not None
               for built in program.outcomes.values())


@contextlib.contextmanager
def shadowed() -> Iterator[Shadow]:
    shadow = Shadow()
    original_validate = ValidatingPolicy.validate
    original_fast = ValidatingPolicy._fast
    answered: list[bool] = []

    def fast(self: ValidatingPolicy, request: Any, ctx: Any) -> Any:
        outcome = original_fast(self, request, ctx)
        answered.append(outcome is not None and outcome is not fused.REFERENCE)
        return outcome

    async def validate(self: ValidatingPolicy, request: Any, obj: Any, ctx: Any) -> Any:
        answered.clear()
        validating.FAST_PATH = True
        fast = await original_validate(self, request, obj, ctx)
        # a member whose group decided already answers without `_fast`: with one of its prebuilt outcomes
        decided = any(answered) or _prebuilt(self, fast)
        validating.FAST_PATH = False
        try:
            reference = await original_validate(self, request, obj, ctx)
        finally:
            validating.FAST_PATH = True
        shadow.compared += 1
        shadow.decided += decided
        if fast != reference:
            shadow.mismatches.append((self.id, fast, reference))
        return reference

    original_answers = FusedGroup.answers
    ValidatingPolicy.validate = validate  # type: ignore[method-assign]
    ValidatingPolicy._fast = fast  # type: ignore[method-assign]
    FusedGroup.answers = lambda self, request, ctx: {}  # type: ignore[method-assign]
    try:
        yield shadow
    finally:
        ValidatingPolicy.validate = original_validate  # type: ignore[method-assign]
        ValidatingPolicy._fast = original_fast  # type: ignore[method-assign]
        FusedGroup.answers = original_answers  # type: ignore[method-assign]
        validating.FAST_PATH = True
