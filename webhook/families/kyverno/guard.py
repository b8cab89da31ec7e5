"""What runs before any handler, for a rule or a foreach entry: context entries, then preconditions.

Kyverno's order (pkg/engine/handlers): CEL preconditions, load the context, check the preconditions; a
failure to load or to evaluate is the rule's error, preconditions that do not hold skip it.
"""

from __future__ import annotations

from typing import Any, Mapping

from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Outcome, RuleResult

from .cel_rule import activation_of, preconditions_hold
from .conditions import ConditionError, evaluate_conditions
from .context_entries import ContextEntry, ContextError, load_entries
from .rule_env import RuleEnv
from .rule_types import RuleHead, RuleRef, ValidationHandler
from .variables import JsonContext


@frozen_dataclass
class Prepared:
    ctx: JsonContext
    early: RuleResult | None = None   # the rule's result without its handler (error or skip)


def load_and_check(ref: RuleRef, context: tuple[ContextEntry, ...], preconditions: Any, ctx: JsonContext,
                   env: RuleEnv) -> Prepared:
    try:
        ctx = load_entries(context, ctx, env.lookups, env.overrides)
    except ContextError as exc:
        return Prepared(ctx, ref.result(Outcome.ERROR, f"failed to load context: {exc}"))
    try:
        pre = evaluate_conditions(preconditions, ctx)
    except ConditionError as exc:
        return Prepared(ctx, ref.result(Outcome.ERROR, f"failed to evaluate preconditions: {exc}"))
    if not pre.passed:
        return Prepared(ctx, ref.result(Outcome.SKIP, "; ".join(
            m for m in ("preconditions not met", pre.message) if m)))
    return Prepared(ctx)


def cel_preconditions(head: RuleHead, ctx: JsonContext, env: RuleEnv) -> RuleResult | None:
    if not head.cel_preconditions:
        return None
    try:
        if not preconditions_hold(head.cel_preconditions, activation_of(ctx.data, env)):
            return head.ref.result(Outcome.SKIP, "cel preconditions not met")
    except Exception as exc:  # CelError: the message names the expression
        return head.ref.result(Outcome.ERROR, f"failed to evaluate cel preconditions: {exc}")
    return None


def prepare(head: RuleHead, ctx: JsonContext, env: RuleEnv) -> Prepared:
    early = cel_preconditions(head, ctx, env)
    if early is not None:
        return Prepared(ctx, early)
    return load_and_check(head.ref, head.context, head.preconditions, ctx, env)


@frozen_dataclass
class GuardedCheck:
    """A foreach entry's (or a rule's) context and preconditions around its check; ``check`` None: the entry
    names no check and gives no result once its context and preconditions pass."""

    context: tuple[ContextEntry, ...]
    preconditions: Any
    check: ValidationHandler | None

    def run(self, ref: RuleRef, ctx: JsonContext, env: RuleEnv, resource: Any) -> RuleResult | None:
        prepared = load_and_check(ref, self.context, self.preconditions, ctx, env)
        if prepared.early is not None:
            return prepared.early
        return self.check.check(ref, prepared.ctx, env, resource) if self.check is not None else None
