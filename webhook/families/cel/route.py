"""The route a CEL policy's evaluation takes on the request path, and why: decided once for the whole
policy set when the family compiles it (webhook.families.cel.plan), carried by the policy, never changed.

- fused-group: the policy's match conditions and validations are one element of a program joined with
  the other members of the set's group (webhook.families.cel.fusedgroup), evaluated once per request for
  all of them; what the group cannot decide for it goes down the next two routes.
- fused: its own fused program (webhook.families.cel.fused); what that cannot decide (an error, a failing
  validation with a messageExpression) the reference route decides.
- reference: each expression in turn, in Kubernetes' order (validating.ValidatingPolicy._evaluate): the
  route every other one is checked against, and the only one with `--cel-evaluation=reference`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from webhook.families.cel.fused import Fused
from webhook.model.policy import EvalContext
from webhook.model.review import AdmissionRequest


class Route(str, Enum):
    GROUP = "fused-group"
    FUSED = "fused"
    REFERENCE = "reference"


class GroupDecisions(Protocol):
    """A fused group as its members see it."""

    def outcome(self, slot: int, request: AdmissionRequest, ctx: EvalContext) -> Any:
        """The member's outcome as the group decided it on this request, fused.REFERENCE, or None (not decided
        here: the member's own routes decide). Never raises."""


@dataclass(frozen=True, eq=False)
class CelRoute:
    route: Route
    why: str
    programs: tuple[Fused | None, ...] = ()  # per variant of the policy: its fused program (fused, fused-group)
    group: GroupDecisions | None = None  # fused-group: the group, and the policy's place in it
    slot: int = -1

    def program(self, index: int) -> Fused | None:
        return self.programs[index] if index < len(self.programs) else None


# a policy compiled outside a set (the family always plans one)
UNPLANNED = CelRoute(Route.REFERENCE, "not planned: compiled outside a policy set")
