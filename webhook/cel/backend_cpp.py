"""cel-expr-python backend: Google's C++ CEL runtime; our libraries plug in as Python overloads.

Two properties of the runtime shape this module: an overload parameter declared `dyn` does not match
any concrete value at run time (so a `dyn` parameter is declared once per concrete kind), and an
extension's function name cannot take extra overloads (so the strings extension is ours, in Python).
Its evaluator also enforces a comprehension iteration budget and raises once it is spent.
"""

from __future__ import annotations

import datetime
import itertools
import re
from typing import Any, Callable, Mapping

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_encoders, ext_math, ext_optional

from webhook.cel import checked, exact_time, nullrefs, optionals
from webhook.cel.activation import Activation
from webhook.cel.cost import CostLimitExceeded, charge_call
from webhook.cel.envs import EnvSpec
from webhook.cel.errors import CelError
from webhook.cel.functions import CURRENT, CelCallContext, Overload, fn
from webhook.cel.nul import Unwrappable, contains_nul, result_has_nul, unwrap, wrap_strings
from webhook.cel.nul import results as nul_results
from webhook.cel.source import (guard_accumulating_ranges, presence_tests_on_scalars, route_string_conversions,
                                tokenize)
from webhook.cel.values import KINDS, STRING_CONVERTIBLE, check_size, describe, opaque_type, plain, with_name

MAX_ACCUMULATED = 1000   # elements a map/filter may range over (their cost here is quadratic in it)
TOO_LONG = "__qm_too_long"  # the guard of long map/filter ranges: every call is an error
_OPAQUE_TEXT = "__qm_opaque_text"

T = cel.Type
_ERROR = T.ERROR
_TYPES = {
    "string": T.STRING, "int": T.INT, "uint": T.UINT, "double": T.DOUBLE, "bool": T.BOOL, "bytes": T.BYTES,
    "null": T.NULL, "list": T.List(T.DYN), "map": T.Map(T.DYN, T.DYN), "timestamp": T.TIMESTAMP,
    "duration": T.DURATION, "dyn": T.DYN,
    "list(int)": T.List(T.INT),   # a result only (a list's indexes: webhook.cel.comprehensions)
}


def _guarded(overload: Overload) -> Callable[..., Any]:
    name, impl, cost = overload.name, overload.impl, overload.cost

    def call(*args: Any) -> Any:
        try:
            given = unwrap(args) if nul_results.wrapping else args
            charge_call(name, cost, given)  # before the work: a call over budget never starts
            result = check_size(impl(*given))
        except CostLimitExceeded:
            raise  # not an error value: the evaluation stops (see CppProgram._run)
        except Exception as exc:  # the runtime turns this into an error value; keep the function's name
            raise RuntimeError(with_name(name, exc)) from None
        if result_has_nul(result):  # the runtime will cut it: the evaluation is redone exactly (nul.py)
            nul_results.seen += 1
        if may_hold_times and (isinstance(result, _TIMES) or
                               (type(result) is list and any(isinstance(x, _TIMES) for x in result))):
            # a duration sum, a sorted list of timestamps: the runtime refuses Python's
            return exact_time.as_protos(result)
        return result
    may_hold_times = overload.result in ("dyn", "list", "duration", "timestamp")
    return call


_TIMES = (datetime.datetime, datetime.timedelta)


def _opaque_text(value: Mapping[str, Any]) -> str:
    if opaque_type(value) not in STRING_CONVERTIBLE or "text" not in value:
        raise ValueError(f"no matching overload for string({describe(value)})")
    return value["text"]


def _too_long(size: int) -> Any:
    raise ValueError(f"map/filter over {size} elements, more than the limit of {MAX_ACCUMULATED}")


def _declare(overloads: tuple[Overload, ...]) -> list[Any]:
    by_name: dict[str, list[Any]] = {}
    for overload in overloads:
        choices = [KINDS if kind == "dyn" else (kind,) for kind in overload.params]
        for kinds in itertools.product(*choices):
            ident = "_".join(("m" if overload.member else "f", overload.name.replace(".", "_"), *kinds))
            by_name.setdefault(overload.name, []).append(cel.Overload(
                ident, _TYPES[overload.result], [_TYPES[k] for k in kinds],
                is_member=overload.member, impl=_guarded(overload)))
    return [cel.FunctionDecl(name, decls) for name, decls in by_name.items()]


_SCALARS = (bool, int, float, str, type(None))


# Errors after which the expression is retried in its Kubernetes-faithful form (see CppBackend.compile)
_RETRY_ON = ("_?._", "_[?_]", "Applying SELECT to non-message type", "string(map")


class CppProgram:
    __slots__ = ("_expression", "_env", "_key", "_nul_key", "_wrapped_key", "_fallback_source", "_fallback", "_spec",
                 "_source", "_twin", "_text_source", "_text")

    def __init__(self, expression: Any, env: Any, fallback_source: str | None, spec: EnvSpec, source: str,
                 text_source: str | None = None) -> None:
        self._expression, self._env = expression, env
        self._key = ("cel-expr-python", id(env))
        self._nul_key = ("nul", id(env))
        self._wrapped_key = ("nul-wrapped", id(env))
        self._fallback_source = fallback_source
        self._fallback: Any = None
        self._spec, self._source = spec, source   # for the exact twin (`_exactly`)
        self._twin: Any = None
        # a duration or timestamp result: its exact text, `string(...)` of the same source (webhook.cel.exact_time)
        self._text_source, self._text = text_source, None

    def _eval(self, expression: Any, activation: Mapping[str, Any], shared: Activation | None,
              protos: bool = False) -> Any:
        """Converting a pod into the runtime costs several times evaluating a plain check on it
        (`load-tests/bench_cel.py`): a shared Activation converts once per environment for all the expressions of
        one request."""
        data = exact_time.as_protos(activation) if protos else activation
        if shared is None:
            return expression.eval(data=data)
        if protos:
            return expression.eval(shared.replace(self._key, self._env.Activation(data)))
        return expression.eval(shared.cached(self._key, lambda: self._env.Activation(data)))

    def _attempt(self, expression: Any, activation: Mapping[str, Any], shared: Activation | None) -> Any:
        value = self._eval(expression, activation, shared)
        if value.type() == _ERROR and "Non-CEL value type" in _error_text(value):
            value = self._eval(expression, activation, shared, protos=True)  # only then pay for the conversion
        return value

    def _faithful(self) -> Any:
        """The rewritten form, compiled on first need; None when there is none or it does not compile."""
        if self._fallback is None and self._fallback_source is not None:
            try:
                self._fallback = _checked(self._env.compile(self._fallback_source), self._spec, self._fallback_source)
            except (RuntimeError, CelError):
                self._fallback_source = None
        return self._fallback

    def _exactly(self, activation: Mapping[str, Any], shared: Activation | None) -> Any:
        """The value on the exact runtime (cel-python), for a NUL that wrapping cannot carry (a key, bytes,
        a result of our functions): the same source compiled there on first need. An expression it cannot
        compile (optionals, `cel.bind`, the math/base64 extensions) is an error then, never a value read
        from cut strings."""
        twin = self._twin
        if twin is None:
            try:
                twin = _exact_backend().compile(self._spec, self._source)
            except CelError as exc:
                twin = str(exc)
            self._twin = twin
        if isinstance(twin, str):
            raise CelError(f"a value holds a NUL character, which only the exact runtime reads, and it cannot "
                           f"run this expression ({twin})")
        return twin.run(activation, shared)

    def _redo(self, activation: Mapping[str, Any], shared: Activation | None, made: int) -> Any:
        """`_exactly` after the runtime ran: what it generated (generator.Apply) is generated again there."""
        generated = CURRENT.get(_NO_CONTEXT).generated
        if generated is not None:
            del generated[made:]
        return self._exactly(activation, shared)

    def run_strict(self, activation: Mapping[str, Any], shared: Activation) -> Any:
        """The plain form once on the shared activation: no retry in the faithful form, no protobuf
        conversion. Any error is a CelError without a polished message: for callers that keep `run` as
        their exact reference path and use this only for the common, error-free case. NULs in string
        values are read wrapped, as in `_uncut`; any other NUL is an error here (`run` reads it exactly)."""
        if not shared.cached_with(self._nul_key, contains_nul, activation):
            return self._strict(activation, shared)
        data = shared.cached_with(self._wrapped_key, _wrapped, activation)
        if data is False:
            raise CelError("a key or bytes value holds a NUL character")
        nul_results.wrapping += 1
        try:
            return unwrap(self._strict(data, shared))
        finally:
            nul_results.wrapping -= 1

    def _strict(self, data: Mapping[str, Any], shared: Activation) -> Any:
        seen = nul_results.seen
        converted = shared.cached(self._key, lambda: self._env.Activation(data))
        try:
            value = self._expression.eval(converted)
        except RuntimeError as exc:  # e.g. the iteration budget
            raise CelError(str(exc)) from None
        if nul_results.seen != seen:
            raise CelError("a function's result holds a NUL character")
        if value.type() == _ERROR:
            raise CelError("evaluation error")
        result = _python(value)
        return result if type(result) in _SCALARS else plain(result)

    def serialized(self) -> bytes:
        """The plain form's checked tree (a serialized cel.expr.CheckedExpr: webhook.cel.checked)."""
        return self._expression.serialize()

    def run(self, activation: Mapping[str, Any], shared: Activation | None = None) -> Any:
        # a NUL the runtime would cut (webhook.cel.nul): asked once per shared activation and environment,
        # as its conversion is
        if contains_nul(activation) if shared is None else shared.cached_with(self._nul_key, contains_nul, activation):
            return self._uncut(activation, shared)
        return self._run(activation, activation, shared)

    def _run(self, data: Mapping[str, Any], activation: Mapping[str, Any], shared: Activation | None) -> Any:
        """`data`: what the runtime reads, `activation` or its copy with wrapped strings (`_uncut`)."""
        seen, made = nul_results.seen, _generated()
        try:
            value = self._attempt(self._expression, data, shared)
            if value.type() == _ERROR and any(m in _error_text(value) for m in _RETRY_ON):
                faithful = self._faithful()
                if faithful is not None:
                    value = self._attempt(faithful, data, shared)
        except RuntimeError as exc:  # e.g. the iteration budget
            if nul_results.seen != seen:
                return self._redo(activation, shared, made)
            raise CelError(_clean(str(exc))) from None
        if nul_results.seen != seen:  # one of our functions returned a value the runtime cut
            return self._redo(activation, shared, made)
        if value.type() == _ERROR:
            raise CelError(_clean(_error_text(value)))
        result = _python(value)
        if self._text_source is not None and isinstance(result, _TIMES):
            return self._exact(data, shared, result)
        return result if type(result) in _SCALARS else plain(result)

    def _exact(self, data: Mapping[str, Any], shared: Activation | None, result: Any) -> Any:
        """The duration or timestamp `result` with its nanoseconds, read from its `string()`; `result` when that
        cannot be had."""
        try:
            if self._text is None:
                self._text = self._env.compile(self._text_source)
            text = _python(self._attempt(self._text, data, shared))
        except RuntimeError:
            return result
        return exact_time.with_nanoseconds(result, text)

    def _uncut(self, activation: Mapping[str, Any], shared: Activation | None) -> Any:
        """An activation holding a NUL, read whole. NULs in string values only (what Kubernetes lets in:
        annotation values, ConfigMap data, env values): this runtime on the values with those strings
        wrapped (webhook.cel.nul.wrap_strings), as fast as ever and with every feature. A NUL in a key or
        in bytes: the exact runtime (`_exactly`)."""
        data = _wrapped(activation) if shared is None else shared.cached_with(self._wrapped_key, _wrapped, activation)
        if data is False:
            return self._exactly(activation, shared)
        nul_results.wrapping += 1
        try:
            return unwrap(self._run(data, activation, shared))
        finally:
            nul_results.wrapping -= 1


def _wrapped(activation: Mapping[str, Any]) -> Any:
    """wrap_strings, or False (not None: Activation caches a false value) where it cannot help."""
    try:
        return wrap_strings(activation)
    except Unwrappable:
        return False


_NO_CONTEXT = CelCallContext()


def _generated() -> int:
    """How many objects this evaluation's context has generated so far (see `_redo`)."""
    generated = CURRENT.get(_NO_CONTEXT).generated
    return 0 if generated is None else len(generated)


_exact: list[Any] = []   # the cel-python backend of the exact twins, built on first need


def _exact_backend() -> Any:
    if not _exact:
        from webhook.cel.backend_py import PyBackend
        _exact.append(PyBackend())
    return _exact[0]


_lost_per_null = 0  # references to None plain_value() loses per null (webhook.cel.nullrefs), set with the first env


def _python(value: Any) -> Any:
    result = value.plain_value()
    if _lost_per_null:
        nulls = nullrefs.nones(result)
        if nulls:
            nullrefs.give_back(nulls * _lost_per_null)
    return result


def _error_text(value: Any) -> str:
    """The binding reports an optional result as an ERROR value it cannot convert."""
    try:
        return str(value.plain_value())
    except TypeError:
        return "the expression evaluates to an optional; end it with .orValue(...) or .value()"


def _clean(message: str) -> str:
    for prefix in ("UNKNOWN: ", "INTERNAL: ", "INVALID_ARGUMENT: ", "NOT_FOUND: "):
        message = message.replace(prefix, "")
    return message.replace(" [INTERNAL]", "").strip()


# text that can make an optional value: `.?f`, `[?k]`, `optional.*`, a list's `first()` and `last()` (`?`
# entries store values, not optionals)
_OWN_FUNCTIONS = frozenset({TOO_LONG, _OPAQUE_TEXT})  # this backend's own Python functions, beside the libraries'
_MAY_MAKE_OPTIONALS = re.compile(r"\.\s*\?|\[\s*\?|\boptional\b|\b(?:first|last)\s*\(")


def _checked(expression: Any, spec: EnvSpec, text: str) -> Any:
    """`expression` (compiled from `text`), unless an optional can reach Python from it (webhook.cel.optionals):
    the runtime crashes converting a list or map that holds one. Only text that can make an optional is read."""
    if not _MAY_MAKE_OPTIONALS.search(text):
        return expression
    try:
        tree = checked.parse_checked(expression.serialize())
    except (ValueError, RuntimeError):  # a tree we cannot read: as ever (never seen on compiled text)
        return expression
    try:
        optionals.check(tree, spec.function_names | _OWN_FUNCTIONS)
    except optionals.OptionalEscapes as exc:
        raise CelError(str(exc)) from None
    return expression


class CppBackend:
    name = "cel-expr-python"

    def __init__(self) -> None:
        self._envs: dict[str, Any] = {}

    def _env(self, spec: EnvSpec) -> Any:
        env = self._envs.get(spec.name)
        if env is None:
            overloads = tuple(o for lib in spec.libraries for o in lib.overloads) + (
                fn(TOO_LONG, ["int"], "dyn", _too_long), fn(_OPAQUE_TEXT, ["map"], "string", _opaque_text))
            env = cel.NewEnv(
                variables={name: T.DYN for name in spec.variables},
                extensions=[ext_optional.ExtOptional(), ext_math.ExtMath(), ext_encoders.ExtEncoders(),
                            ext_bindings.ExtBindings()],
                functions=_declare(overloads))
            if not self._envs:
                global _lost_per_null
                _lost_per_null = nullrefs.lost_per_null(env)
            self._envs[spec.name] = env
        return env

    def compile_plain(self, spec: EnvSpec, source: str) -> CppProgram:
        """The plain form alone, for programs only ever run by `run_strict` (which never retries)."""
        try:
            plain_text = guard_accumulating_ranges(source, tokenize(source), MAX_ACCUMULATED, TOO_LONG)
            env = self._env(spec)
            return CppProgram(_checked(env.compile(plain_text), spec, plain_text), env, None, spec, source)
        except ValueError as exc:
            raise CelError(str(exc)) from None
        except RuntimeError as exc:
            raise CelError(_compile_message(str(exc))) from None

    def compile(self, spec: EnvSpec, source: str) -> CppProgram:
        """Two forms. The plain one runs by default. The faithful one adds what Kubernetes (cel-go) does
        and this runtime does not: presence tests on null/scalars are "absent", `string()` of opaque
        values gives their text. It is used after an error those rewrites address (or when the plain
        form does not type-check because of them): its extra nesting would otherwise cost every
        evaluation and can exceed the parser's depth limit of 32 on large mutations."""
        try:
            plain_text = guard_accumulating_ranges(source, tokenize(source), MAX_ACCUMULATED, TOO_LONG)
            faithful = presence_tests_on_scalars(source, tokenize(source))
            faithful = route_string_conversions(faithful, tokenize(faithful), _OPAQUE_TEXT)
            faithful = guard_accumulating_ranges(faithful, tokenize(faithful), MAX_ACCUMULATED, TOO_LONG)
        except ValueError as exc:
            raise CelError(str(exc)) from None
        env = self._env(spec)
        try:
            compiled = _checked(env.compile(plain_text), spec, plain_text)
            timed = compiled.return_type() in (T.DURATION, T.TIMESTAMP)
            return CppProgram(compiled, env, faithful if faithful != plain_text else None, spec, source,
                              f"string({plain_text})" if timed else None)
        except RuntimeError as exc:
            if "'string' applied to" not in str(exc):
                raise CelError(_compile_message(str(exc))) from None
        try:
            return CppProgram(_checked(env.compile(faithful), spec, faithful), env, None, spec, source)
        except RuntimeError as exc:
            raise CelError(_compile_message(str(exc))) from None


def _compile_message(message: str) -> str:
    """The runtime's report is one `ERROR: <input>:line:col: problem` line per problem plus caret art."""
    problems = [line.split("ERROR: <input>:", 1)[1].replace(" (in container '')", "").replace(" [INVALID_ARGUMENT]", "")
                for line in message.splitlines() if "ERROR: <input>:" in line and "'*error*'" not in line]
    return "; ".join(p.strip() for p in problems) or message.strip()
