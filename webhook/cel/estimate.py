"""A CEL expression's worst-case cost, estimated once when it is compiled; past the limit it is refused.

Kubernetes estimates every rule of a CRD when it is written (cel-go's checker.Cost with the library's
EstimateCallCost) and refuses one whose estimate exceeds StaticEstimatedCostLimit (10,000,000) per expression or
StaticEstimatedCRDCostLimit (100,000,000) for the whole; an input without a declared bound is assumed as large as a
request allows. The same here, on the tree the runtime compiled (webhook.cel.checked), with the same units as the
runtime meter (webhook.cel.cost): each call of our library is estimated by its own cost function (the one the
runtime charges) applied to the largest arguments it can see, and each call or field selection costs 1. Sizes:
- a constant is its own size; a value read from the request (or a variable, a param) is unbounded: a string of up
  to MaxRequestSizeBytes (3 MiB) characters, a list or map of up to half that many elements (each at least one
  character and a separator);
- a comprehension's body runs at most as often as its range has elements, and never more than the runtimes'
  comprehension budget (10,000 steps for the whole evaluation); a map or filter ranges over at most 1,000 (the
  guard the C++ runtime puts before them), and inside a comprehension a value equal to an enclosing range is no
  longer than that range was allowed to be;
- values derived from an iteration variable share a total: the elements of one list together are no larger than
  the request, and the elements of all maps and filters together no more than the comprehension budget; so of
  the calls on them, at most total/largest can each see the largest value, the others the smallest (an upper
  bound for costs that grow with the size as fast as linearly or faster).
"""

from __future__ import annotations

import contextvars
import math
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Mapping

from webhook.cel.checked import Call, Comprehension, Const, Ident, ListOf, Node, Select, Struct
from webhook.cel.functions import Overload
from webhook.model.quickinit import frozen_dataclass

MAX_REQUEST = 3 * 1024 * 1024          # Kubernetes' MaxRequestSizeBytes
UNBOUNDED_STRING = MAX_REQUEST
UNBOUNDED_LIST = MAX_REQUEST // 2
ITERATIONS = 10_000                     # the runtimes' comprehension budget (webhook.cel.backend_py.ITERATION_BUDGET)
EXPRESSION_LIMIT = 10_000_000           # Kubernetes' StaticEstimatedCostLimit
POLICY_LIMIT = 100_000_000              # Kubernetes' StaticEstimatedCRDCostLimit, for all expressions of a policy
_SCALARS = frozenset({"bool", "int", "uint", "double", "null", "timestamp", "duration"})
_GUARD = "__qm_too_long"                # webhook.cel.backend_cpp.TOO_LONG: the guard of long map/filter ranges


@frozen_dataclass
class Size:
    largest: int                # elements or characters, of one value
    together: int | None = None  # derived from an iteration variable: the most all its values add up to (they
    #                              share the request; the elements of maps and filters share the comprehension budget)

    @property
    def shared(self) -> bool:
        return self.together is not None


@frozen_dataclass
class Estimate:
    cost: float
    largest_part: str       # the call that costs most, for the message


class _Sized:
    """A stand-in value of a given length, for the cost functions (they read len() and the type only)."""

    length = 0

    def __len__(self) -> int:
        return self.length


class _Str(_Sized, str):
    pass


class _List(_Sized, list):  # type: ignore[type-arg]
    pass


class _Map(_Sized, dict):  # type: ignore[type-arg]
    pass


def _stand_in(kind: str, size: int) -> Any:
    made: _Sized
    if kind == "string" or kind == "bytes":
        made = _Str()
    elif kind == "list":
        made = _List()
    elif kind == "map":
        made = _Map()
    else:
        return 1
    made.length = size
    return made


class _Estimator:
    def __init__(self, functions: Mapping[str, list[Overload]]) -> None:
        self.functions = functions
        self.cost = 0.0
        self.parts: dict[str, float] = {}

    def charge(self, what: str, units: float) -> None:
        self.cost += units
        self.parts[what] = self.parts.get(what, 0.0) + units

    def size(self, node: Node, scope: Mapping[str, Size], ranges: Mapping[Node, int]) -> Size:
        """The largest size the node's value can have (without charging anything)."""
        if ranges and node in ranges:  # as long as the enclosing range it equals, and no more shared than it
            return Size(ranges[node], self.size(node, scope, {}).together)
        if isinstance(node, Const):
            return Size(len(node.value) if isinstance(node.value, (str, bytes)) else 1)
        if isinstance(node, Ident):
            return scope.get(node.name, Size(UNBOUNDED_STRING))
        if isinstance(node, Select):
            return Size(1) if node.test_only else Size(UNBOUNDED_STRING, self.size(node.operand, scope, ranges).together)
        if isinstance(node, ListOf):
            return Size(len(node.elements))
        if isinstance(node, Struct):
            return Size(len(node.entries))
        if isinstance(node, Comprehension):
            if _is_bind(node):
                inner = {**scope, node.accu_var: self.size(node.accu_init, scope, ranges)}
                return self.size(node.result, inner, ranges)
            if isinstance(node.accu_init, ListOf) and not node.accu_init.elements:  # map, filter
                over = self.size(node.iter_range, scope, ranges)
                return Size(min(over.largest, ITERATIONS), ITERATIONS if over.shared else None)
            return Size(1)
        if isinstance(node, Call):
            return self._call_size(node, scope, ranges)
        return Size(UNBOUNDED_STRING)

    def _call_size(self, node: Call, scope: Mapping[str, Size], ranges: Mapping[Node, int]) -> Size:
        operands = ((node.target,) if node.target is not None else ()) + node.args
        sizes = [self.size(n, scope, ranges) for n in operands]
        together = max((s.together for s in sizes if s.together is not None), default=None)
        if node.function == "_?_:_" and len(node.args) == 3:
            bound = _guarded_bound(node)
            branches = max(sizes[1].largest, sizes[2].largest)
            return Size(min(branches, bound) if bound is not None else branches, together)
        if node.function in ("_+_",):
            return Size(min(sum(s.largest for s in sizes), UNBOUNDED_STRING), together)
        if node.function in ("size", "_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_", "_&&_", "_||_", "!_", "@in"):
            return Size(1)
        overloads = self.functions.get(node.function)
        if overloads:  # ours: a scalar, or as large as a request allows (flatten, split, join, replace can grow)
            if all(o.result in _SCALARS for o in overloads):
                return Size(1)
            return Size(UNBOUNDED_STRING, together)
        return Size(max((s.largest for s in sizes), default=1), together)

    def walk(self, node: Node, scope: Mapping[str, Size], ranges: Mapping[Node, int], runs: int) -> None:
        """Charge the node and everything under it, `runs` being how often it can be evaluated."""
        if isinstance(node, (Const, Ident)):
            return
        if isinstance(node, Select):
            self.charge("field selections", runs)
            self.walk(node.operand, scope, ranges, runs)
            return
        if isinstance(node, (ListOf, Struct)):
            children: Iterable[Node | None] = node.elements if isinstance(node, ListOf) else \
                (part for entry in node.entries for part in entry)
            for child in children:
                if child is not None:
                    self.walk(child, scope, ranges, runs)
            return
        if isinstance(node, Comprehension):
            self._comprehension(node, scope, ranges, runs)
            return
        if isinstance(node, Call):
            if node.target is not None:
                self.walk(node.target, scope, ranges, runs)
            for arg in node.args:
                self.walk(arg, scope, ranges, runs)
            self.charge("calls", runs)
            self._library_call(node, scope, ranges, runs)

    def _comprehension(self, node: Comprehension, scope: Mapping[str, Size], ranges: Mapping[Node, int],
                       runs: int) -> None:
        self.walk(node.iter_range, scope, ranges, runs)
        self.walk(node.accu_init, scope, ranges, runs)
        if _is_bind(node):
            self.walk(node.result, {**scope, node.accu_var: self.size(node.accu_init, scope, ranges)}, ranges, runs)
            return
        length = min(self.size(node.iter_range, scope, ranges).largest, ITERATIONS)
        inner_runs = min(runs * max(length, 1), ITERATIONS)
        element = Size(UNBOUNDED_STRING, MAX_REQUEST)
        inner = {**scope, node.accu_var: Size(length), node.iter_var: element}
        if node.iter_var2:
            inner[node.iter_var2] = element
        within = {**ranges, **{bounded: length for bounded in _range_values(node.iter_range)}}
        self.walk(node.loop_condition, inner, within, inner_runs)
        self.walk(node.loop_step, inner, within, inner_runs)
        self.walk(node.result, {**scope, node.accu_var: Size(length)}, ranges, runs)

    def _library_call(self, node: Call, scope: Mapping[str, Size], ranges: Mapping[Node, int], runs: int) -> None:
        overloads = self.functions.get(node.function)
        if not overloads:
            return  # the runtime's own function (size, contains, matches...): bounded by the runtime
        operands = ((node.target,) if node.target is not None else ()) + node.args
        sizes = [self.size(n, scope, ranges) for n in operands]
        worst = 0.0
        for overload in overloads:
            if len(overload.params) != len(sizes):
                continue
            largest = _call_cost(overload, sizes, shared_as=None)
            if any(s.shared for s in sizes):
                # values sharing a total: at most total/largest of them can each be as large as they may be
                smallest = _call_cost(overload, sizes, shared_as=1)
                large = min(runs, max(math.ceil(s.together / max(s.largest, 1)) for s in sizes if s.together))
                worst = max(worst, runs * smallest + large * max(largest - smallest, 0.0))
            else:
                worst = max(worst, runs * largest)
        self.charge(f"{node.function}()", worst)


def _call_cost(overload: Overload, sizes: list[Size], shared_as: int | None) -> float:
    from webhook.cel.cost import inputs  # the runtime's default: one traversal of each argument
    args = []
    for kind, size in zip(overload.params, sizes):
        length = shared_as if (shared_as is not None and size.shared) else size.largest
        if kind == "dyn":
            kind = "string"  # the dearest reading of an unbounded value, character by character
        if kind == "list" or kind == "map":
            length = min(length, UNBOUNDED_LIST)
        args.append(_stand_in(kind, length))
    try:
        return float(overload.cost(*args) if overload.cost is not None else inputs(*args))
    except Exception:  # a cost function that needs real values: its call is charged the default
        return float(inputs(*args))


def _range_values(node: Node) -> list[Node]:
    """The range itself, and the value its guard binds (`cel.bind(r, X, size(r) <= K ? r : guard)`): both are
    no longer than the range was allowed to be, wherever the body reads them again."""
    if isinstance(node, Comprehension) and _is_bind(node):
        return [node, node.accu_init]
    return [node]


def _is_bind(node: Comprehension) -> bool:
    return isinstance(node.iter_range, ListOf) and not node.iter_range.elements


def _guarded_bound(node: Call) -> int | None:
    """`size(x) <= K ? x : __qm_too_long(...)` (the C++ runtime's guard of a map/filter range): at most K."""
    condition, _, otherwise = node.args
    if not (isinstance(otherwise, Call) and otherwise.function == _GUARD):
        return None
    if isinstance(condition, Call) and condition.function == "_<=_" and isinstance(condition.args[1], Const):
        bound = condition.args[1].value
        return bound if isinstance(bound, int) else None
    return None


def estimate(tree: Node, overloads: Iterable[Overload]) -> Estimate:
    by_name: dict[str, list[Overload]] = {}
    for overload in overloads:
        by_name.setdefault(overload.name, []).append(overload)
    estimator = _Estimator(by_name)
    estimator.walk(tree, {}, {}, 1)
    largest = max(estimator.parts.items(), key=lambda kv: kv[1], default=("nothing", 0.0))
    return Estimate(math.ceil(estimator.cost), f"{largest[0]} (estimated {math.ceil(largest[1])})")


_TALLY: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("quartermaster_cel_policy_cost", default=None)


@contextmanager
def policy_total() -> Iterator[list[int]]:
    """The estimated costs of every expression compiled inside, summed (one policy's: its total is bounded too)."""
    tally = [0]
    token = _TALLY.set(tally)
    try:
        yield tally
    finally:
        _TALLY.reset(token)


def add_to_policy(cost: int) -> None:
    tally = _TALLY.get()
    if tally is not None:
        tally[0] += cost


def policy_problem(total: int) -> str | None:
    """Why a policy whose expressions together are estimated at `total` is refused, or None."""
    if total <= POLICY_LIMIT:
        return None
    return (f"the estimated cost of its expressions together, {total}, exceeds the limit of {POLICY_LIMIT} for one "
            "policy (Kubernetes' StaticEstimatedCRDCostLimit)")
