"""Compile CEL once per process, evaluate per request, bounded.

Limits: at compile time the expression length, comprehension nesting and `cel.bind` count are
bounded; at evaluation both backends stop after 10,000 comprehension steps (the C++ runtime's own
budget, mirrored in the Python one), and every library call charges its cost to the evaluation's meter
(webhook.cel.cost: Kubernetes' per-call limit, and the request's deadline), so a runaway expression is a
CelError in milliseconds.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Mapping, Protocol, Sequence

from webhook.cel import (call_routes, checked, comprehensions, cost, dra, estimate, lib_time, literal_types,
                         numeric_order, source)
from webhook.cel.activation import Activation
from webhook.cel.envs import EnvSpec, env_spec
from webhook.cel.errors import CelError
from webhook.cel.functions import CURRENT, CelCallContext
from webhook.cel.inline import bind_variables
from webhook.cel.orvalue import rewrite_kyverno_or_value, rewrite_plain_or_value
from webhook.model.quickinit import frozen_dataclass

MAX_EXPRESSION_LENGTH = 5000
MAX_COMPREHENSION_DEPTH = 3
MAX_BINDS = 3
MAX_CACHED = 20_000   # compiled programs kept; policy reloads with edited expressions must not grow it forever
BACKENDS = ("cel-expr-python", "cel-python")

_backends: dict[str, Any] = {}
_cache: dict[tuple[str, str, str], "CelProgram"] = {}
_bound_cache: dict[tuple[str, str, str], "CelProgram | None"] = {}
_lock = threading.Lock()  # policy reloads compile in a worker thread


def _backend(name: str) -> Any:
    with _lock:
        if name not in _backends:
            if name == "cel-expr-python":
                from webhook.cel.backend_cpp import CppBackend
                _backends[name] = CppBackend()
            elif name == "cel-python":
                from webhook.cel.backend_py import PyBackend
                _backends[name] = PyBackend()
            else:
                raise CelError(f"unknown CEL backend {name!r} (QUARTERMASTER_CEL); expected one of {', '.join(BACKENDS)}")
        return _backends[name]


def _short(expression: str) -> str:
    flat = " ".join(expression.split())
    return flat if len(flat) <= 160 else flat[:157] + "..."


class BackendProgram(Protocol):
    """An expression as a backend compiled it (backend_cpp.CppProgram, backend_py.PyProgram)."""

    def run(self, activation: Mapping[str, Any], shared: Activation | None = None) -> Any: ...

    def run_strict(self, activation: Mapping[str, Any], shared: Activation) -> Any:
        """The common case at the least cost, no retries; any error is a CelError (CelProgram.evaluate_strict)."""

    def serialized(self) -> bytes | None:
        """The checked tree (a serialized cel.expr.CheckedExpr), None when the backend has none to give."""


@frozen_dataclass(eq=False)
class CelProgram:
    expression: str
    env: str
    backend: str
    variable_refs: frozenset[str]      # names used as variables.<name>
    uses_all_variables: bool           # `variables` used whole: every variable may be needed
    _spec: EnvSpec
    _program: BackendProgram
    estimated_cost: int = 0            # its worst case (webhook.cel.estimate), for a policy's total

    @property
    def _values_key(self) -> tuple[str, str]:
        return ("values", self.env)

    def evaluate(self, activation: Mapping[str, Any] | Activation, lookups: Any = None, *,
                 generated: list[Any] | None = None) -> Any:
        """Activation values are plain JSON; the result is plain Python. `generated` collects generator.Apply."""
        shared = activation if isinstance(activation, Activation) else None
        if shared is not None:
            data = shared.cached(self._values_key, lambda: self._complete(shared.values))
        else:
            data = self._complete(activation)
        token = CURRENT.set(CelCallContext(lookups, generated))
        metered = cost.start()
        try:
            result = self._program.run(data, shared)
            cost.settle()
            return result
        except CelError as exc:
            stopped = cost.why_stopped()
            if stopped is not None:  # the meter's reason, whatever error the runtime made of it
                raise cost.CostLimitExceeded(f"{_short(self.expression)}: {stopped}") from None
            raise CelError(f"{_short(self.expression)}: {exc}") from None
        except RecursionError:
            raise CelError(f"{_short(self.expression)}: value nested too deeply") from None
        finally:
            CURRENT.reset(token)
            cost.stop(metered)

    def evaluate_strict(self, shared: Activation) -> Any:
        """The common case only, at the least cost: one evaluation on the shared activation, no retries
        (see CppProgram.run_strict), no lookups, no generated objects, no polished error messages. Any
        error is a CelError; callers then take `evaluate`, which gives the exact outcome and message.
        Only for programs of `compile_bound` (the C++ backend) that call no lookup or effectful function."""
        data = shared.cached(self._values_key, lambda: self._complete(shared.values))
        metered = cost.start()
        try:
            result = self._program.run_strict(data, shared)
            cost.settle()
            return result
        except RecursionError:
            raise CelError("value nested too deeply") from None
        finally:
            cost.stop(metered)

    def tree(self) -> checked.Node | None:
        """The expression tree the runtime compiled and runs in `evaluate_strict` (webhook.cel.checked), for
        the Python form (webhook.cel.to_python); None when the backend has none to give (the pure-Python one)
        or it is not one webhook.cel.checked can read."""
        serialized = self._program.serialized()
        if serialized is None:
            return None
        try:
            return checked.parse_checked(serialized)
        except (ValueError, RuntimeError):
            return None

    def _complete(self, activation: Mapping[str, Any]) -> Mapping[str, Any]:
        """Environment defaults (the authorizer) and the DRA device in Kubernetes' typed shape."""
        if not (self._spec.defaults or self._spec.typed_device):
            return activation
        data = dict(activation)
        for name, value in self._spec.defaults:
            data.setdefault(name, value)
        if self._spec.typed_device and isinstance(data.get("device"), Mapping):
            data["device"] = dra.device_activation(data["device"])
        return data

    def __call__(self, activation: Mapping[str, Any] | Activation, lookups: Any = None) -> bool:
        result = self.evaluate(activation, lookups)
        if not isinstance(result, bool):
            raise CelError(f"{_short(self.expression)}: must evaluate to a bool, got {type(result).__name__}")
        return result


def _route_optional_results(text: str, spec: EnvSpec) -> str:
    routes = {name: impl for lib in spec.libraries for name, impl in lib.optional_results}
    if not routes or not any(name.rpartition(".")[2] in text for name in routes):
        return text
    return call_routes.route_optional_results(text, source.tokenize(text), routes)


class CelCompiler:
    """One cache per process: the same (backend, env, expression) compiles once."""

    def __init__(self, backend: str | None = None) -> None:
        self.backend = backend or os.environ.get("QUARTERMASTER_CEL") or "cel-expr-python"
        _backend(self.backend)

    def compile(self, expression: str, env: str = "admission") -> CelProgram:
        if not isinstance(expression, str) or not expression.strip():
            raise CelError("expression must be a non-empty string")
        key = (self.backend, env, expression)
        cached = _cache.get(key)
        if cached is None:
            program = self._compile(expression, env)
            with _lock:
                if len(_cache) >= MAX_CACHED:
                    _cache.pop(next(iter(_cache)))  # the oldest entry; its program stays alive while used
                cached = _cache.setdefault(key, program)
        estimate.add_to_policy(cached.estimated_cost)
        return cached

    def compile_bound(self, expression: str, bindings: Sequence[tuple[str, str]], env: str = "admission",
                      strict: bool = False) -> CelProgram | None:
        """`expression` with the variables it reads folded in (`bindings`: (name, expression) in evaluation
        order; see webhook.cel.inline). None where that is not possible (the pure-Python backend has no
        `cel.bind`); callers then evaluate the variables one by one. Each text passed the limits when it was
        compiled on its own; the folded form is checked only by the runtime (its nesting limit).
        `strict`: the program is only run by `evaluate_strict`, so only its plain form is built."""
        if self.backend != "cel-expr-python":
            return None
        key = (self.backend, env, "\0".join([expression, *(f"{n}\0{t}" for n, t in bindings)]), strict)
        if key in _bound_cache:
            return _bound_cache[key]
        program = None
        try:
            spec = env_spec(env)
            or_value = rewrite_plain_or_value if spec.plain_or_value else (lambda t: t)

            def plain(text: str) -> str:
                text = comprehensions.rewrite(text)
                return or_value(lib_time.route_milliseconds(text, source.tokenize(text)))
            text = bind_variables(plain(expression), [(n, plain(t)) for n, t in bindings], spec.or_value_compat)
            if text is not None and not spec.typed_device:
                program = self._program(expression, text, source.tokenize(text), spec, strict)
        except (CelError, ValueError):
            program = None
        with _lock:
            if len(_bound_cache) >= MAX_CACHED:
                _bound_cache.pop(next(iter(_bound_cache)))
            return _bound_cache.setdefault(key, program)

    def _program(self, expression: str, text: str, tokens: list[Any], spec: EnvSpec, strict: bool = False) -> CelProgram:
        text = source.rewrite_constructions(text, tokens) if spec.constructions else text
        text = _route_optional_results(text, spec)
        backend = _backend(self.backend)
        compiled = backend.compile_plain(spec, text) if strict else backend.compile(spec, text)
        return CelProgram(expression, spec.name, self.backend, frozenset(), False, spec, compiled)

    def _compile(self, expression: str, env: str) -> CelProgram:
        try:
            spec = env_spec(env)
        except ValueError as exc:
            raise CelError(str(exc)) from None
        if len(expression) > MAX_EXPRESSION_LENGTH:
            raise CelError(f"expression is longer than {MAX_EXPRESSION_LENGTH} characters")
        try:
            tokens = source.tokenize(expression)
        except ValueError as exc:
            raise CelError(f"does not compile: {_short(expression)}: {exc}") from None
        if source.comprehension_depth(tokens) > MAX_COMPREHENSION_DEPTH:
            raise CelError(f"expression nests more than {MAX_COMPREHENSION_DEPTH} comprehensions (all, exists, map, filter)")
        if source.bind_count(tokens) > MAX_BINDS:
            raise CelError(f"expression uses cel.bind more than {MAX_BINDS} times")
        if spec.typed_device:
            try:
                dra.check_device_expression(tokens)
            except CelError as exc:
                raise CelError(f"does not compile: {_short(expression)}: {exc}") from None
        if not spec.bindings and source.bind_count(tokens):
            raise CelError(f"does not compile: {_short(expression)}: cel.bind is not declared in Kubernetes' CEL "
                           f"environment for admission policies (only Kyverno's policies have it); name the value "
                           f"with a policy variable (spec.variables) and read it as variables.<name>")
        try:
            text = comprehensions.rewrite(expression, tokens)
        except (CelError, ValueError) as exc:
            raise CelError(f"does not compile: {_short(expression)}: {exc}") from None
        if lib_time.uses_milliseconds(tokens):
            text = lib_time.route_milliseconds(text, source.tokenize(text))
        text_tokens = source.tokenize(text) if text != expression else tokens
        if spec.or_value_compat:
            rewritten = rewrite_kyverno_or_value(text, text_tokens)
            text_tokens = source.tokenize(rewritten) if rewritten != text else text_tokens
            text = rewritten
        elif spec.plain_or_value:
            rewritten = rewrite_plain_or_value(text, text_tokens)
            text_tokens = source.tokenize(rewritten) if rewritten != text else text_tokens
            text = rewritten
        before = text
        constructed = source.rewrite_constructions(text, text_tokens) if spec.constructions else text
        text = _route_optional_results(constructed, spec)
        try:
            try:
                compiled, typed = self._checked_pair(spec, text)
            except CelError as exc:
                if not numeric_order.refused_for_mixed_numbers(str(exc)):
                    raise
                if self.backend == "cel-python":  # its evaluator refuses such a comparison
                    raise CelError("comparing int, uint and double with each other (`5 < 10.0`) is not supported by "
                                   "the cel-python backend") from None
                compiled, typed = self._checked_pair(spec, numeric_order.widen(text))
            if constructed == before:   # typed constructions become map literals of mixed values: not checked
                literal_types.check(typed.serialized())
        except literal_types.RefusedLiteral as exc:
            raise CelError(f"does not compile: {_short(expression)}: {exc}") from None
        except CelError as exc:
            raise CelError(f"does not compile: {_short(expression)}: {exc}") from None
        refs, whole = source.variable_refs(tokens)
        return CelProgram(expression, env, self.backend, refs, whole, spec, compiled,
                          self._estimated(expression, spec, typed))

    def _checked_pair(self, spec: EnvSpec, text: str) -> tuple[Any, Any]:
        """The backend's program and the C++ checker's (the same one on the default backend): the reference
        backend has no type checker, so it refuses what that refuses."""
        compiled = _backend(self.backend).compile(spec, text)
        typed = compiled if self.backend == "cel-expr-python" else _backend("cel-expr-python").compile(spec, text)
        return compiled, typed

    def _estimated(self, expression: str, spec: EnvSpec, typed: Any) -> int:
        """The expression's worst-case cost; CelError past Kubernetes' limit for one expression. The tree is the C++
        runtime's (the reference backend compiles the same text there for it); without one, nothing is estimated."""
        try:
            tree = checked.parse_checked(typed.serialized())
        except (ValueError, RuntimeError):
            return 0
        found = estimate.estimate(tree, (o for lib in spec.libraries for o in lib.overloads))
        if found.cost > estimate.EXPRESSION_LIMIT:
            raise CelError(f"{_short(expression)}: estimated cost {found.cost} exceeds the limit of "
                           f"{estimate.EXPRESSION_LIMIT} for one expression (Kubernetes' StaticEstimatedCostLimit); "
                           f"most of it: {found.largest_part}. Inputs without a bound are assumed as large as a request "
                           "allows: bound them first (a map or filter ranges over at most 1,000 elements), or "
                           "avoid calls per element over whole lists")
        return found.cost
