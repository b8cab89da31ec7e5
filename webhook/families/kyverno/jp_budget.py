"""The work one JMESPath query may do: a budget of steps, and a limit on how deeply an expression nests.

Kyverno (go-jmespath) has neither, but Go's goroutine stacks grow to a gigabyte and a Go policy engine runs
beside the API server, not inside a Python event loop. Here a 3,000-deep expression passed `quartermaster
validate` and failed at run time with RecursionError; and a query is a loop over request data whose cost the
policy author controls (a function per element of a list, each over a long string). So:
- an expression nesting deeper than MAX_DEPTH is refused when it is compiled (at load where the policy writes it
  out, else on first use);
- every node the interpreter visits costs one step, and every function call the size of its arguments (a
  character 0.1, an element or entry 1, as CEL's cost model counts), charged before it runs; a query that spends
  more than MAX_STEPS, or runs past the request's deadline (webhook.model.deadline), is an error of its rule,
  which the policy's failure policy decides.
"""

from __future__ import annotations

import contextvars
import time
from typing import Any, Iterator, Mapping

from webhook.model.deadline import request_deadline

MAX_DEPTH = 100          # levels of nesting of one expression's tree (a field path of 100 segments is 100)
MAX_STEPS = 1_000_000    # one query's steps: node visits plus the size of function arguments
_CHECK_EVERY = 1024      # steps between looks at the clock (a look costs more than a step)


class BudgetSpent(ValueError):
    """A query spent its steps, or its request's deadline passed; the message names the limit."""


class QueryBudget:
    """The steps one query has left (mutable, one per query)."""

    __slots__ = ("left", "deadline", "next_look")

    def __init__(self, steps: int = MAX_STEPS) -> None:
        self.left = steps
        self.deadline = request_deadline()
        self.next_look = steps - _CHECK_EVERY

    def spend(self, steps: float, what: str) -> None:
        self.left -= steps
        if self.left < 0:
            raise BudgetSpent(f"{what}: the query spent its budget of {MAX_STEPS} steps (nodes visited and the size "
                              "of function arguments)")
        if self.left < self.next_look:
            self.next_look = self.left - _CHECK_EVERY
            if time.monotonic() > self.deadline:
                raise BudgetSpent(f"{what}: the request's deadline (its ?timeout=) passed during the query")


_CURRENT: contextvars.ContextVar[QueryBudget | None] = contextvars.ContextVar("quartermaster_jmespath_budget",
                                                                              default=None)


def begin() -> contextvars.Token[QueryBudget | None]:
    return _CURRENT.set(QueryBudget())


def end(token: contextvars.Token[QueryBudget | None]) -> None:
    _CURRENT.reset(token)


def spend(steps: float, what: str) -> None:
    """Charge the query in progress (outside one, as a function called directly: the step is checked alone)."""
    budget = _CURRENT.get()
    (budget if budget is not None else QueryBudget()).spend(steps, what)


def argument_steps(args: Any) -> float:
    """One step per call, and the size of each argument: 0.1 a character, 1 an element or entry."""
    steps = 1.0
    for arg in args:
        if isinstance(arg, str):
            steps += len(arg) * 0.1
        elif isinstance(arg, (list, Mapping)):
            steps += len(arg)
    return steps


def _children(node: Mapping[str, Any]) -> Iterator[Any]:
    for child in node.get("children") or ():
        if isinstance(child, Mapping):
            yield child
    value = node.get("value")
    if isinstance(value, Mapping) and "type" in value:
        yield value


def depth(tree: Mapping[str, Any]) -> int:
    """How deeply the parsed expression nests, walked without recursion (the point is a tree too deep for it)."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in _children(node))
    return deepest


def check_depth(tree: Mapping[str, Any], expression: str) -> None:
    found = depth(tree)
    if found > MAX_DEPTH:
        shown = expression if len(expression) <= 80 else expression[:77] + "..."
        raise BudgetSpent(f"the expression {shown!r} nests {found} levels deep, more than the limit of {MAX_DEPTH}")
