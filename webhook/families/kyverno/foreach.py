"""Kyverno ``foreach`` in validate rules, and what mutate's foreach shares with it: each element of a JMESPath
list gets ``element``, ``elementIndex`` (and ``element<N>``/``elementIndex<N>`` for nesting level N), its own
context and preconditions.
"""

from __future__ import annotations

import time
from typing import Any

from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Outcome, RuleResult

from .guard import GuardedCheck
from .jp_errors import JMESPathError
from .rule_env import RuleEnv
from .rule_types import RuleRef
from .variables import JsonContext


def evaluate_list(expression: str, ctx: JsonContext) -> list:
    """Kyverno's EvaluateList: the query result, wrapped in a list when it is a single value."""
    value = ctx.resolve(expression)
    return value if isinstance(value, list) else [value]


def element_context(ctx: JsonContext, element: Any, index: int, nesting: int) -> JsonContext:
    return ctx.with_values(**{"element": element, f"element{nesting}": element,
                              "elementIndex": index, f"elementIndex{nesting}": index})


def past_deadline(ref: RuleRef, env: RuleEnv, index: int, count: int) -> RuleResult | None:
    """An error once the request's deadline has passed. Each element can cost a walk of the whole object (a
    strategic-merge anchor over every container: quadratic in the list), so a long list must not hold the
    event loop past the time the API server waits; the rule errs and its failure policy decides."""
    if time.monotonic() <= env.deadline:
        return None
    return ref.result(Outcome.ERROR, f"foreach stopped at element {index} of {count}: the request's time budget "
                                     "ran out")


@frozen_dataclass
class ForeachEntry:
    list: str
    step: GuardedCheck            # the entry's context, preconditions and check (deny, patterns, foreach)
    element_scope: Any = True     # as written: True, False or null


@frozen_dataclass
class ForeachValidation:
    """validate.foreach: every element that applies must pass; ``nesting`` is this list's depth (0 at the rule)."""

    entries: tuple[ForeachEntry, ...]
    nesting: int = 0

    def check(self, ref: RuleRef, ctx: JsonContext, env: RuleEnv, resource: Any) -> RuleResult | None:
        applied = 0
        list_error: Exception | None = None
        for entry in self.entries:
            try:
                elements = evaluate_list(entry.list, ctx)
            except JMESPathError as exc:
                if "Unknown key" not in str(exc):
                    list_error = exc
                continue
            for index, element in enumerate(elements):
                late = past_deadline(ref, env, index, len(elements))
                if late is not None:
                    return late
                if element is None:
                    continue
                if entry.element_scope is True and not isinstance(element, dict):
                    return ref.result(Outcome.ERROR, "failed to process foreach: cannot use elementScope=true "
                                                     "foreach rules for elements that are not maps")
                scoped = entry.element_scope is not False
                target = element if scoped and isinstance(element, dict) else resource
                result = entry.step.run(ref, element_context(ctx, element, index, self.nesting),
                                        env.for_element(index), target)
                if result is None or result.outcome is Outcome.SKIP:
                    continue
                if result.outcome is not Outcome.PASS:
                    if result.outcome is Outcome.ERROR and "failed to evaluate preconditions" in result.message:
                        continue
                    return ref.result(result.outcome, f"validation failure: {result.message}")
                applied += 1
        if applied == 0:
            return ref.result(Outcome.ERROR, f"failed to evaluate list: {list_error}") if list_error else None
        return ref.result(Outcome.PASS, "rule passed")
