"""CEL for one policy: compile its expressions once, evaluate them per request with lazy variables.

Variables are compiled once, in order. Per request only the variables an expression needs (its
`variable_refs`, transitively) are evaluated, each at most once; a variable that fails is left out of
`variables`, so the expression fails only if it actually reads it (and then with the variable's error),
as Kubernetes' lazy variable map behaves.
"""

from __future__ import annotations

import contextvars
import re
import time
from contextlib import contextmanager
from dataclasses import field
from typing import Any, Callable, Iterator, Mapping, Sequence

from webhook.cel import Activation, CelCompiler, CelError
from webhook.model.lookups import Lookups
from webhook.model.quickinit import frozen_dataclass

ALL = "*"  # in Expr.refs: the expression reads `variables` as a whole


class CompileFailed(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


# what a document of the wrong shape raises while compiling (a string where a list belongs...)
MALFORMED = (CompileFailed, TypeError, AttributeError, ValueError, KeyError)


def as_failure(exc: Exception) -> CompileFailed:
    """Any compile problem as a CompileFailed naming a field (`spec` when the shape was simply wrong)."""
    if isinstance(exc, CompileFailed):
        return exc
    return CompileFailed("spec", f"malformed policy document ({type(exc).__name__}: {exc})")


@frozen_dataclass
class Expr:
    field: str  # where it stands in the policy, for messages: spec.validations[0].expression
    text: str
    program: Any
    refs: frozenset[str]

    def __str__(self) -> str:
        return self.text


def compile_expr(cel: CelCompiler, text: Any, field: str, env: str) -> Expr:
    if not isinstance(text, str) or not text.strip():
        raise CompileFailed(field, "must be a non-empty CEL expression")
    try:
        program = cel.compile(text, env=env)
    except CelError as exc:
        raise CompileFailed(field, str(exc)) from None
    refs = frozenset(program.variable_refs)
    if program.uses_all_variables:  # `variables` used whole: any of them may be read
        refs = refs | {ALL}
    expr = Expr(field, text, program, refs)
    compiled = _COMPILED.get()
    if compiled is not None:
        compiled.append(expr)
    return expr


# the expressions compiled for one policy variant, so that their `variables.x` reads can be checked against the
# variables it declares once all are known (compile_expr is called from each kind's body compiler)
_COMPILED: contextvars.ContextVar[list[Expr] | None] = contextvars.ContextVar("quartermaster_cel_variant_exprs",
                                                                               default=None)


@contextmanager
def compiled_exprs() -> Iterator[list[Expr]]:
    """Every Expr compiled inside, in compile order."""
    exprs: list[Expr] = []
    token = _COMPILED.set(exprs)
    try:
        yield exprs
    finally:
        _COMPILED.reset(token)


def check_variable_refs(exprs: Sequence[Expr], declared: Sequence[str], field: str) -> None:
    """A read of a variable the policy does not declare is a compile error, as Kubernetes' typed `variables`
    makes it (`undefined field`); left to run, it failed on every request the policy matched."""
    names = set(declared)
    for expr in exprs:
        missing = sorted(expr.refs - names - {ALL})
        if missing:
            known = ", ".join(declared) if declared else "none"
            raise CompileFailed(expr.field, f"reads undefined variable {', '.join(f'variables.{m}' for m in missing)} "
                                            f"({field} declares: {known})")


@frozen_dataclass
class Variables:
    order: tuple[str, ...]
    exprs: Mapping[str, Expr]
    cel: CelCompiler | None = None
    # id(expr) -> (expr, the expression with the variables it reads folded in, or None): see `folded`
    _folded: dict[int, tuple[Expr, Any]] = field(default_factory=dict, compare=False, repr=False)

    def folded(self, expr: Expr) -> Any:
        """The program that evaluates `expr` on the shared activation alone: itself when it reads no
        variable, else with its variables bound in place (webhook.cel.inline); None when it cannot be.
        Built on first use and kept: a policy's expressions are fixed once compiled."""
        found = self._folded.get(id(expr))
        if found is None:
            found = self._folded[id(expr)] = (expr, self._fold(expr))
        return found[1]

    def _fold(self, expr: Expr) -> Any:
        needed = self.needed(expr.refs)
        if not needed and ALL not in expr.refs:
            return expr.program
        if self.cel is None or ALL in expr.refs:
            return None
        return self.cel.compile_bound(expr.text, [(n, self.exprs[n].text) for n in needed], expr.program.env)

    @classmethod
    def compile(cls, cel: CelCompiler, raw: Any, field: str, env: str) -> "Variables":
        if raw is None:
            return cls((), {}, cel)
        if not isinstance(raw, list):
            raise CompileFailed(field, "must be a list of {name, expression}")
        order, exprs = [], {}
        for i, item in enumerate(raw):
            name = item.get("name") if isinstance(item, Mapping) else None
            if not isinstance(name, str) or not name:
                raise CompileFailed(f"{field}[{i}].name", "a variable needs a name")
            if name in exprs:
                raise CompileFailed(f"{field}[{i}].name", f"variable {name!r} is defined twice")
            exprs[name] = compile_expr(cel, item.get("expression"), f"{field}[{i}].expression", env)
            order.append(name)
        return cls(tuple(order), exprs, cel)

    def needed(self, refs: frozenset[str]) -> list[str]:
        """The variables `refs` reads, directly or through other variables, in definition order."""
        if ALL in refs:
            return list(self.order)
        seen: set[str] = set()
        stack = [r for r in refs if r in self.exprs]
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            if ALL in self.exprs[name].refs:
                return list(self.order)
            stack.extend(r for r in self.exprs[name].refs if r in self.exprs and r not in seen)
        return [n for n in self.order if n in seen]


def _tests_presence(text: str, name: str) -> bool:
    n = re.escape(name)
    return re.search(rf"\bvariables\s*\.\s*\?\s*{n}\b|\bhas\s*\(\s*variables\s*\.\s*{n}\b|"
                     rf"\bvariables\s*\.\s*{n}\s*\.\s*orValue\s*\(", text) is not None


class Scope:
    """One evaluation of one policy: the activation, the variables computed so far."""

    def __init__(self, base: Mapping[str, Any], variables: Variables, lookups: Lookups | None,
                 budget: float | None = None, share: Callable[[Mapping[str, Any]], Activation] | None = None) -> None:
        # webhookConfiguration.timeoutSeconds: every expression is bounded by the CEL engine's cost guard,
        # and no new one starts once the policy's own time is up
        self.deadline = time.monotonic() + budget if budget is not None else None
        self.base = dict(base)
        self.variables = variables
        self.lookups = lookups
        self._values: dict[str, Any] = {}
        self._errors: dict[str, str] = {}
        # the activation converted once and reused: `share` finds one for these values across the policies
        # of a request (the values are the same objects); without it, one per scope
        self._share = share
        self._shared: Activation | None = None

    def _activation(self) -> Activation:
        if self._shared is None:
            self._shared = self._share(self.base) if self._share is not None else Activation(dict(self.base))
        return self._shared

    def _fast(self, expr: Expr, generated: list[Any] | None) -> tuple[bool, Any]:
        """(done, value): the expression on the shared activation, its variables folded in. Any failure
        leaves it to the reference path (lazy variables one by one), which gives the same outcome and its
        exact message."""
        program = self.variables.folded(expr)
        if program is None:
            return False, None
        collected: list[Any] | None = [] if generated is not None else None
        try:
            self._check_deadline(expr)
            value = program.evaluate(self._activation(), self.lookups, generated=collected)
        except Exception:
            return False, None
        if collected:
            generated.extend(collected)  # type: ignore[union-attr]
        return True, value

    def _check_deadline(self, expr: Expr) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise CelError(f"{expr.field}: not evaluated, the policy used up its timeoutSeconds budget")

    def _variable(self, name: str) -> None:
        if name in self._values or name in self._errors:
            return
        expr = self.variables.exprs[name]
        try:
            self._values[name] = self._run(expr, self._bound(self.variables.needed(expr.refs)))
        except CelError as exc:
            self._errors[name] = str(exc)

    def _bound(self, names: Sequence[str]) -> dict[str, Any]:
        for name in names:
            self._variable(name)
        return {n: self._values[n] for n in names if n in self._values}

    def _run(self, expr: Expr, variables: Mapping[str, Any], generated: list[Any] | None = None) -> Any:
        self._check_deadline(expr)
        activation = {**self.base, "variables": dict(variables)}
        try:
            return expr.program.evaluate(activation, self.lookups, generated=generated)
        except CelError:
            raise
        except Exception as exc:  # a library function raising: still this expression's error
            raise CelError(f"{expr.text}: {type(exc).__name__}: {exc}") from None

    def evaluate(self, expr: Expr, generated: list[Any] | None = None) -> Any:
        """`generated` collects what generator.Apply produces (GeneratingPolicy)."""
        done, value = self._fast(expr, generated)
        if done:
            return value
        needed = self.variables.needed(expr.refs)
        bound = self._bound(needed)
        try:
            value = self._run(expr, bound, generated)
        except CelError as exc:
            failed = [n for n in needed if n in self._errors]
            if failed:
                raise CelError(f"variable {failed[0]!r} failed: {self._errors[failed[0]]}") from None
            raise CelError(str(exc)) from None
        # a failed variable is absent from the activation: an expression that tests its presence (`variables.?x`,
        # `has(variables.x)`, Kyverno's `variables.x.orValue(y)`) would read the failure as "unset" and answer
        # as if the value were missing, where Kubernetes and Kyverno report the variable's error
        for name in needed:
            if name in self._errors and _tests_presence(expr.text, name):
                raise CelError(f"variable {name!r} failed: {self._errors[name]}")
        return value

    def test(self, expr: Expr) -> bool:
        value = self.evaluate(expr)
        if not isinstance(value, bool):
            raise CelError(f"{expr.text}: must evaluate to a bool, got {type(value).__name__}")
        return value

    def set(self, name: str, value: Any) -> None:
        self.base[name] = value
        self._shared = None
