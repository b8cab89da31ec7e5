"""A Kyverno rule compiled into a typed handler, chosen once at load (as Kyverno's pkg/engine/handlers are).

Each rule type has its own record: ``ValidateRule`` (pattern, anyPattern, deny, foreach, podSecurity, cel),
``MutateRule`` (strategic merge and JSON 6902 patches, foreach) and ``GenerateRule`` (data, clone, cloneList).
What they share (matching, context, preconditions) is a ``RuleHead``. A handler reports in the model's
``RuleResult``, whose outcome is the model's enum; the policy settles the action afterwards.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol

from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Action, Outcome, PolicyId, RuleResult

from .context_entries import ContextEntry
from .match import RuleSelector
from .rule_env import RuleEnv
from .variables import JsonContext


@frozen_dataclass
class RuleRef:
    """Whom a rule's results are about: the policy and the rule's own name (``autogen-`` rules included)."""

    policy: PolicyId
    name: str

    def result(self, outcome: Outcome, message: str) -> RuleResult:
        return RuleResult(self.policy, self.name, outcome, message)


class ValidationHandler(Protocol):
    """Checks the resource (None on DELETE) once context and preconditions are loaded; None: no result."""

    def check(self, ref: RuleRef, ctx: JsonContext, env: RuleEnv, resource: Any) -> RuleResult | None: ...


@frozen_dataclass
class Mutated:
    resource: dict
    failure: RuleResult | None = None   # the rule's error; the resource is then the one it was given


class MutationHandler(Protocol):
    def mutate(self, ref: RuleRef, ctx: JsonContext, env: RuleEnv, resource: dict) -> Mutated: ...


@frozen_dataclass
class Generated:
    result: RuleResult
    objects: tuple[Mapping[str, Any], ...] = ()


class GenerationHandler(Protocol):
    def generate(self, ref: RuleRef, ctx: JsonContext, env: RuleEnv) -> Generated: ...


@frozen_dataclass
class RuleHead:
    """What every rule type does before its handler runs: match, then CEL preconditions, context, preconditions."""

    ref: RuleRef
    selector: RuleSelector
    context: tuple[ContextEntry, ...] = ()
    preconditions: Any = None
    cel_preconditions: tuple[tuple[str, Any], ...] = ()
    properties: tuple[tuple[str, str], ...] = ()   # reportProperties
    foreach: bool = False   # walks a list of the request: evaluated beside the event loop on large objects

    @property
    def name(self) -> str:
        return self.ref.name


@frozen_dataclass
class ValidateRule:
    head: RuleHead
    handler: ValidationHandler
    action: Action                       # validate.failureAction, else the spec's validationFailureAction
    explicit_action: bool = False        # validate.failureAction was written
    action_overrides: tuple[Mapping[str, Any], ...] = ()   # validate.failureActionOverrides
    # allowExistingViolations on an Enforce pattern/deny/foreach rule: an UPDATE of an object that already
    # violated it is not blocked
    spares_existing: bool = False


@frozen_dataclass
class MutateRule:
    head: RuleHead
    handler: MutationHandler


@frozen_dataclass
class GenerateRule:
    head: RuleHead
    handler: GenerationHandler
