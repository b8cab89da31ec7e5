"""Function declarations shared by both backends: a name, typed overloads, one Python implementation each.

Both runtimes are fed from these declarations, so the differential test exercises the same code on each.
Functions needing data beyond the activation (cluster lookups, generated objects) read the per-evaluation
context set by the compiler (a contextvar: callbacks run synchronously on the evaluating thread).
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from webhook.model.quickinit import frozen_dataclass


@frozen_dataclass
class Overload:
    name: str                   # CEL name; a dotted name ("sets.contains") is a namespaced global function
    params: tuple[str, ...]     # kinds (values.KINDS or "dyn"); for a member function the first is the receiver
    result: str
    impl: Callable[..., Any]
    member: bool = False
    # the call's cost from its arguments (webhook.cel.cost), charged before `impl` runs; None: one traversal
    # of each argument (webhook.cel.cost.inputs), right for every function linear in its input
    cost: Callable[..., float] | None = None


@frozen_dataclass
class Library:
    name: str
    overloads: tuple[Overload, ...]
    # functions whose result is an optional: (CEL name, the overload returning a list of at most one
    # element that stands in for it; calls are rewritten, webhook.cel.call_routes)
    optional_results: tuple[tuple[str, str], ...] = ()


def fn(name: str, params: Iterable[str], result: str, impl: Callable[..., Any],
       cost: Callable[..., float] | None = None) -> Overload:
    return Overload(name, tuple(params), result, impl, member=False, cost=cost)


def method(name: str, params: Iterable[str], result: str, impl: Callable[..., Any],
           cost: Callable[..., float] | None = None) -> Overload:
    return Overload(name, tuple(params), result, impl, member=True, cost=cost)


@dataclass
class CelCallContext:
    """What one evaluation may reach beyond its activation."""

    lookups: Any = None
    generated: list[Any] | None = field(default=None)


CURRENT: contextvars.ContextVar[CelCallContext] = contextvars.ContextVar("quartermaster_cel_context")


def current() -> CelCallContext:
    try:
        return CURRENT.get()
    except LookupError:
        return CelCallContext()
