"""Compile CEL once, evaluate per request, with a static cost guard.

cel-python interprets in pure Python and cannot be interrupted, so the guard is applied at compile
time: expression length and comprehension nesting are bounded, which (with the 3 MiB request cap)
bounds evaluation work.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Mapping

import celpy
from celpy import celtypes

MAX_EXPRESSION_LENGTH = 5000
MAX_COMPREHENSION_DEPTH = 3
_MACROS = ("all(", "exists(", "exists_one(", "map(", "filter(")


class CelError(Exception):
    """A CEL expression did not compile, or failed to evaluate."""


def to_cel(value: Any) -> Any:
    return celpy.json_to_cel(value)


def from_cel(value: Any) -> Any:
    """CEL values back to plain JSON-able Python."""
    if isinstance(value, celtypes.BoolType):
        return bool(value)
    if isinstance(value, (celtypes.IntType, celtypes.UintType)):
        return int(value)
    if isinstance(value, celtypes.DoubleType):
        return float(value)
    if isinstance(value, celtypes.StringType):
        return str(value)
    if isinstance(value, celtypes.BytesType):
        return bytes(value)
    if isinstance(value, (celtypes.MapType, dict)):
        return {from_cel(k): from_cel(v) for k, v in value.items()}
    if isinstance(value, (celtypes.ListType, list, tuple)):
        return [from_cel(v) for v in value]
    return value


def _comprehension_depth(expression: str) -> int:
    """Upper bound of macro nesting, from parentheses around macro calls."""
    depth = best = 0
    stack: list[bool] = []
    i = 0
    while i < len(expression):
        ch = expression[i]
        if ch == "(":
            is_macro = any(expression.endswith(m[:-1], 0, i) for m in _MACROS)
            stack.append(is_macro)
            depth += is_macro
            best = max(best, depth)
        elif ch == ")" and stack:
            depth -= stack.pop()
        i += 1
    return best


@dataclass(frozen=True)
class CelProgram:
    expression: str
    _program: Any

    def evaluate(self, activation: Mapping[str, Any]) -> Any:
        """Activation values are plain JSON; the result is plain Python."""
        try:
            result = self._program.evaluate({k: to_cel(v) for k, v in activation.items()})
        except celpy.CELEvalError as exc:
            raise CelError(f"{self.expression}: {exc.args[0] if exc.args else exc}") from None
        except Exception as exc:  # cel-python raises plain Python errors on some type mismatches
            raise CelError(f"{self.expression}: {exc}") from None
        if isinstance(result, celpy.CELEvalError):
            raise CelError(f"{self.expression}: {result.args[0] if result.args else result}")
        return from_cel(result)

    def __call__(self, activation: Mapping[str, Any]) -> bool:
        result = self.evaluate(activation)
        if not isinstance(result, bool):
            raise CelError(f"{self.expression}: must evaluate to a bool, got {type(result).__name__}")
        return result


class CelCompiler:
    """One environment, one cache: the same expression text compiles once for the whole process."""

    def __init__(self) -> None:
        self._env = celpy.Environment()
        self._cache: dict[str, CelProgram] = {}
        self._lock = threading.Lock()  # policy reloads compile in a worker thread

    def compile(self, expression: str) -> CelProgram:
        if not isinstance(expression, str) or not expression.strip():
            raise CelError("expression must be a non-empty string")
        cached = self._cache.get(expression)
        if cached is not None:
            return cached
        if len(expression) > MAX_EXPRESSION_LENGTH:
            raise CelError(f"expression is longer than {MAX_EXPRESSION_LENGTH} characters")
        if _comprehension_depth(expression) > MAX_COMPREHENSION_DEPTH:
            raise CelError(f"expression nests more than {MAX_COMPREHENSION_DEPTH} comprehensions (all, exists, map, filter)")
        try:
            ast = self._env.compile(expression)
            program = CelProgram(expression, self._env.program(ast))
        except Exception as exc:
            raise CelError(f"does not compile: {str(exc).strip()}") from None
        with self._lock:
            self._cache[expression] = program
        return program
