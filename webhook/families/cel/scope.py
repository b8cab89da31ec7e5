"""CEL for one policy: compile its expressions once, evaluate them per request with lazy variables.

Variables are compiled once, in order. Per request only the variables an expression needs (its
`variable_refs`, transitively) are evaluated, each at most once; a variable that fails is left out of
`variables`, so the expression fails only if it actually reads it (and then with the variable's error),
as Kubernetes' lazy variable map behaves.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from webhook.cel import CelCompiler, CelError
from webhook.model.lookups import Lookups

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


@dataclass(frozen=True)
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
    if getattr(program, "uses_all_variables", False):  # `variables` used whole: any of them may be read
        refs = refs | {ALL}
    return Expr(field, text, program, refs)


@dataclass(frozen=True)
class Variables:
    order: tuple[str, ...]
    exprs: Mapping[str, Expr]

    @classmethod
    def compile(cls, cel: CelCompiler, raw: Any, field: str, env: str) -> "Variables":
        if raw is None:
            return cls((), {})
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
        return cls(tuple(order), exprs)

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


class Scope:
    """One evaluation of one policy: the activation, the variables computed so far."""

    def __init__(self, base: Mapping[str, Any], variables: Variables, lookups: Lookups | None,
                 budget: float | None = None) -> None:
        # webhookConfiguration.timeoutSeconds: every expression is bounded by the CEL engine's cost guard,
        # and no new one starts once the policy's own time is up
        self.deadline = time.monotonic() + budget if budget is not None else None
        self.base = dict(base)
        self.variables = variables
        self.lookups = lookups
        self._values: dict[str, Any] = {}
        self._errors: dict[str, str] = {}

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
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise CelError(f"{expr.field}: not evaluated, the policy used up its timeoutSeconds budget")
        activation = {**self.base, "variables": dict(variables)}
        try:
            return expr.program.evaluate(activation, self.lookups, generated=generated)
        except CelError:
            raise
        except Exception as exc:  # a library function raising: still this expression's error
            raise CelError(f"{expr.text}: {type(exc).__name__}: {exc}") from None

    def evaluate(self, expr: Expr, generated: list[Any] | None = None) -> Any:
        """`generated` collects what generator.Apply produces (GeneratingPolicy)."""
        needed = self.variables.needed(expr.refs)
        bound = self._bound(needed)
        try:
            return self._run(expr, bound, generated)
        except CelError as exc:
            failed = [n for n in needed if n in self._errors]
            if failed:
                raise CelError(f"variable {failed[0]!r} failed: {self._errors[failed[0]]}") from None
            raise CelError(str(exc)) from None

    def test(self, expr: Expr) -> bool:
        value = self.evaluate(expr)
        if not isinstance(value, bool):
            raise CelError(f"{expr.text}: must evaluate to a bool, got {type(value).__name__}")
        return value

    def set(self, name: str, value: Any) -> None:
        self.base[name] = value
