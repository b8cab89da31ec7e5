"""The runtime cost of one CEL evaluation: what our library functions charge before they work.

Kubernetes' model (k8s.io/apiserver/pkg/cel/library/cost.go, cel-go's checker): a function costs by the size
of its inputs and outputs, a character of a string traversed costs 0.1, an element of a list 1, a regular
expression the product of the text's and the pattern's traversal; an evaluation that spends more than the
per-call limit (PerCallLimit, 1,000,000) is cancelled. Both runtimes call our Python functions for every
Kubernetes and Kyverno library call, so each call is charged here, before it runs, from the sizes of its
arguments (the declaration's `cost`, webhook.cel.functions.Overload); functions whose output can outgrow their
input (replace, join, split, findAll, format, range...) also charge what they would build before building it.
The runtimes' own operators are bounded by their comprehension budget and the compile-time limits.

The meter also stops an evaluation past the request's deadline (webhook.model.deadline): the C++ runtime
cannot be interrupted, but it calls back into Python at every library call, and each is a point to stop at.
"""

from __future__ import annotations

import contextvars
import math
import time
from typing import Any, Callable, Mapping

from webhook.cel.errors import CelError
from webhook.cel.values import MAX_VALUE_SIZE
from webhook.model.deadline import request_deadline

PER_CALL_LIMIT = 1_000_000      # Kubernetes' PerCallLimit: the cost of one evaluation of one expression
STRING_TRAVERSAL = 0.1          # cel-go's StringTraversalCostFactor: per character
REGEX_LENGTH = 0.25             # cel-go's RegexStringLengthCostFactor: per character of a pattern
# a match that findAll, regex.replace or regex.extractAll visits: RE2's Python wrapper pays for each as much as
# for reading a thousand characters, so a budget's worth is 10,000 matches (a million took half a minute)
MATCH = 100


class CostLimitExceeded(CelError):
    """An evaluation spent its cost budget, or ran past the request's deadline."""


class Meter:
    """What one evaluation has spent; charged by every library call (mutable, one per evaluation)."""

    __slots__ = ("spent", "limit", "deadline", "exceeded")

    def __init__(self, limit: int = PER_CALL_LIMIT, deadline: float = math.inf) -> None:
        self.spent = 0.0
        self.limit = limit
        self.deadline = deadline
        # why the evaluation was stopped: kept, because a runtime may absorb the error of one call
        # (`error || true`), and a stopped evaluation must never give a value (see `settle`)
        self.exceeded: str | None = None

    def charge(self, units: float, what: str) -> None:
        self.spent += units
        if self.spent > self.limit:
            self.stopped(f"{what}: evaluation cost limit exceeded (the calls so far cost {math.ceil(self.spent)}, "
                         f"the limit is {self.limit} per expression, Kubernetes' PerCallLimit)")
        if self.deadline != math.inf and time.monotonic() > self.deadline:
            self.stopped(f"{what}: the request's deadline (its ?timeout=) passed during the evaluation")

    def stopped(self, message: str) -> None:
        if self.exceeded is None:
            self.exceeded = message
        raise CostLimitExceeded(message)

    def settle(self) -> None:
        """After the evaluation: its value stands only if no call was stopped."""
        if self.exceeded is not None:
            raise CostLimitExceeded(self.exceeded)


_METER: contextvars.ContextVar[Meter | None] = contextvars.ContextVar("quartermaster_cel_meter", default=None)


def start() -> contextvars.Token[Meter | None]:
    """A fresh meter for the evaluation about to run (nested evaluations, such as the exact twin of a C++
    program, share the outer one: one budget per expression)."""
    if _METER.get() is not None:
        return _METER.set(_METER.get())
    return _METER.set(Meter(PER_CALL_LIMIT, request_deadline()))


def current() -> Meter | None:
    return _METER.get()


def stop(token: contextvars.Token[Meter | None]) -> None:
    _METER.reset(token)


def settle() -> None:
    """The evaluation in progress ended with a value: it stands only if no call of it was stopped."""
    meter = _METER.get()
    if meter is not None:
        meter.settle()


def why_stopped() -> str | None:
    """The reason the evaluation in progress was stopped, if it was (its error may read otherwise)."""
    meter = _METER.get()
    return meter.exceeded if meter is not None else None


def charge(units: float, what: str) -> None:
    """Charge the evaluation in progress. Outside one (a library function called directly, as tests do) the
    charge is checked on its own against the limit."""
    meter = _METER.get()
    (meter if meter is not None else Meter()).charge(units, what)


def size(value: Any) -> int:
    """A value's size as cel-go counts it: characters, bytes, elements, entries; 1 for anything else."""
    if isinstance(value, (str, bytes, bytearray, list, tuple, Mapping)):
        return len(value)
    return 1


def traversal(value: Any) -> float:
    """The cost of reading a value once: 0.1 a character, 1 an element or entry."""
    if isinstance(value, (str, bytes, bytearray)):
        return len(value) * STRING_TRAVERSAL
    if isinstance(value, (list, tuple, Mapping)):
        return float(len(value))
    return 0.0


def inputs(*args: Any) -> float:
    """The default cost of a call: one, plus one traversal of each argument."""
    return 1.0 + sum(traversal(a) for a in args)


def refuse_beyond(length: int, what: str) -> None:
    """Before building a string or list of `length`: refused beyond the largest value a request can hold."""
    if length > MAX_VALUE_SIZE:
        message = f"{what}: the result would hold {length} elements, more than the limit of {MAX_VALUE_SIZE}"
        meter = _METER.get()
        if meter is not None:
            meter.stopped(message)
        raise CostLimitExceeded(message)


def result_size(length: int, what: str, per_element: float = STRING_TRAVERSAL) -> None:
    """Before building a string or list of `length`: `refuse_beyond`, and its construction charged (a character
    0.1, as cel-go charges building a result; a list element 1)."""
    refuse_beyond(length, what)
    charge(length * per_element, what)


def pairs(count_a: int, count_b: int) -> float:
    """Comparing every element of one list with every element of another (sets.*, distinct)."""
    return 1.0 + float(count_a) * float(count_b)


def regex(text: Any, pattern: Any) -> float:
    """Kubernetes' cost of a regular expression over a text: the text's traversal times the pattern's."""
    text_cost = math.ceil((1 + size(text)) * STRING_TRAVERSAL)
    return float(text_cost * max(1, math.ceil(size(pattern) * REGEX_LENGTH)))


CostFunction = Callable[..., float]


def charge_call(name: str, cost: CostFunction | None, args: tuple[Any, ...]) -> None:
    """A library call's cost, charged before it runs (the backends call this for every overload)."""
    charge(cost(*args) if cost is not None else inputs(*args), name)
