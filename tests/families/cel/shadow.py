"""Shadow evaluation: every ValidatingPolicy evaluation runs on the policy's planned route (webhook.families.cel.route)
and on the reference route, and both results are kept for comparison. The reference result is what the caller
gets, so a test's own assertions check the reference as before."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator

from webhook.families.cel import fused
from webhook.families.cel.validating import ValidatingPolicy


@dataclass
class Shadow:
    compared: int = 0
    decided: int = 0  # evaluations a fast route answered (the others fell back to the reference)
    mismatches: list[tuple[Any, Any, Any]] = field(default_factory=list)


def _prebuilt(policy: ValidatingPolicy, outcome: Any) -> bool:
    """Whether `outcome` is one the policy's fused programs built at compile time (the reference route builds
    its outcomes per evaluation)."""
    return any(outcome is built for program in policy.route.programs if program is not None
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
        planned = await original_validate(self, request, obj, ctx)
        decided = any(answered) or _prebuilt(self, planned)
        reference = self.reference(request, ctx)
        shadow.compared += 1
        shadow.decided += decided
        if planned != reference:
            shadow.mismatches.append((self.id, planned, reference))
        return reference

    ValidatingPolicy.validate = validate  # type: ignore[method-assign]
    ValidatingPolicy._fast = fast  # type: ignore[method-assign]
    try:
        yield shadow
    finally:
        ValidatingPolicy.validate = original_validate  # type: ignore[method-assign]
        ValidatingPolicy._fast = original_fast  # type: ignore[method-assign]
