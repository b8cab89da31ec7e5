"""cel-python backend: the pure-Python reference implementation, kept honest by the differential test.

Our libraries are registered as celpy functions: one dispatcher per name picks the overload by the
runtime kinds of its arguments and falls back to celpy's built-in function of that name. A namespaced
function (`sets.contains(a, b)`) parses in celpy as a method on an identifier, so each namespace is
bound in the activation to a marker the dispatcher recognises. Features cel-python 0.5 lacks (optional
syntax, `cel.bind`, the math/base64 extensions, a `min` that is a macro there) are refused at compile time.
"""

from __future__ import annotations

import datetime
import threading
from typing import Any, Callable, Mapping

import celpy
import lark
from celpy import celtypes
from celpy.evaluation import Evaluator, base_functions

from webhook.cel import cost
from webhook.cel.cost import CostLimitExceeded, charge_call
from webhook.cel.envs import EnvSpec
from webhook.cel.errors import CelError
from webhook.cel.functions import Overload
from webhook.cel.lib_strings import cel_equal
from webhook.cel.source import MACROS, Token, add_iteration_ticks, opens_call, tokenize
from webhook.cel.values import STRING_CONVERTIBLE, TAG, check_size, describe, kind_of, plain, with_name

ITERATION_BUDGET = 10_000   # the C++ runtime's comprehension budget, mirrored
_NS = "@namespace"
_TICK = "__qm_tick"
_UNSUPPORTED_ROOTS = {"optional": "optional values", "math": "the math extension", "base64": "the base64 extension"}
_UNSUPPORTED_METHODS = {"orValue": "optional values", "hasValue": "optional values", "min": "list min()",
                        "bind": "cel.bind", "optMap": "optional values", "optFlatMap": "optional values"}


class _Budget(BaseException):
    """Spent iteration budget: a BaseException so no evaluator `except Exception` swallows it."""


_SPENT = threading.local()


def _tick() -> celtypes.BoolType:
    _SPENT.steps = getattr(_SPENT, "steps", 0) + 1
    if _SPENT.steps > ITERATION_BUDGET:
        raise _Budget()
    return celtypes.BoolType(True)


def to_cel(value: Any) -> Any:
    if isinstance(value, Mapping):
        return celtypes.MapType({to_cel(k): to_cel(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return celtypes.ListType([to_cel(v) for v in value])
    if isinstance(value, (bytes, bytearray)):
        return celtypes.BytesType(bytes(value))
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        return celtypes.IntType(value)
    if isinstance(value, float):
        return celtypes.DoubleType(value)
    if isinstance(value, str):
        return celtypes.StringType(value)
    if isinstance(value, datetime.datetime):
        return celtypes.TimestampType(value)
    if isinstance(value, datetime.timedelta):
        return celtypes.DurationType(value)
    return value


def from_cel(value: Any) -> Any:
    if isinstance(value, celtypes.BoolType):
        return bool(value)
    if isinstance(value, celtypes.TimestampType):
        return datetime.datetime.fromtimestamp(value.timestamp(), datetime.timezone.utc)
    if isinstance(value, celtypes.DurationType):
        return datetime.timedelta(seconds=value.total_seconds())
    if isinstance(value, (celtypes.IntType, celtypes.UintType)):
        return int(value)
    if isinstance(value, celtypes.DoubleType):
        return float(value)
    if isinstance(value, celtypes.StringType):
        return str(value)
    if isinstance(value, celtypes.BytesType):
        return bytes(value)
    if isinstance(value, Mapping):
        return {from_cel(k): from_cel(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [from_cel(v) for v in value]
    return value


def _matches(overload: Overload, args: tuple[Any, ...]) -> bool:
    return len(args) == len(overload.params) and all(
        p == "dyn" or p == kind_of(a) for p, a in zip(overload.params, args))


def _dispatcher(name: str, overloads: list[Overload]) -> Callable[..., Any]:
    builtin = base_functions.get(name)

    def call(*cel_args: Any) -> Any:
        for arg in cel_args:
            if isinstance(arg, celpy.CELEvalError):
                return arg
        args = tuple(from_cel(a) for a in cel_args)
        target, qualified = overloads, name
        if args and isinstance(args[0], Mapping) and _NS in args[0]:
            qualified = f"{args[0][_NS]}.{name}"
            target, args = [o for o in overloads if o.name == qualified], args[1:]
        else:
            target = [o for o in overloads if o.name == name]
        for overload in target:
            if _matches(overload, args):
                try:
                    charge_call(qualified, overload.cost, args)  # before the work: a call over budget never starts
                    return to_cel(check_size(overload.impl(*args)))
                except CostLimitExceeded:
                    raise _Budget() from None  # the evaluation stops; CelProgram reads the meter's reason
                except Exception as exc:
                    return celpy.CELEvalError(with_name(qualified, exc), type(exc), exc.args)
        if builtin is not None and qualified == name:
            return builtin(*cel_args)
        kinds = ", ".join(describe(a) for a in args)
        return celpy.CELEvalError(f"no matching overload for {qualified}({kinds})", TypeError, ())
    return call


# celpy's own functions (global and method), plus the macros; anything else must come from our libraries
_BUILTIN_CALLS = frozenset({
    "has", "size", "int", "uint", "double", "string", "bytes", "bool", "duration", "timestamp", "type", "dyn",
    "matches", "contains", "startsWith", "endsWith", "all", "exists", "exists_one", "map", "filter",
    "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getFullYear", "getMonth", "getHours",
    "getMilliseconds", "getMinutes", "getSeconds"})


def _refuse_unknown_calls(tokens: list[Token], known: frozenset[str], namespaces: Mapping[str, Any]) -> None:
    """cel-python resolves functions only at evaluation; name an unknown one at compile time, as cel-cpp does."""
    for i, tok in enumerate(tokens[:-1]):
        if tokens[i + 1].text != "(" or not opens_call(tokens, i + 1):  # `x in (y)` calls nothing
            continue
        prev = tokens[i - 1].text if i else ""
        qualifier = tokens[i - 2].text if prev == "." and i >= 2 and tokens[i - 2].kind == "ident" else ""
        is_root_qualifier = qualifier and (i < 3 or tokens[i - 3].text != ".")
        if prev == "." and is_root_qualifier and qualifier in namespaces:
            name = f"{qualifier}.{tok.text}"
            if name not in known:
                raise CelError(f"undeclared reference to {name!r}")
        elif tok.text not in known and tok.text not in _BUILTIN_CALLS:
            raise CelError(f"undeclared reference to {tok.text!r}")


_VALUE_NAMES = frozenset({"true", "false", "null", "in", "int", "uint", "double", "string", "bytes", "bool",
                          "list", "map", "type", "null_type", "duration", "timestamp", "dyn"})


def _refuse_undeclared(tokens: list[Token], declared: frozenset[str]) -> None:
    """cel-python has no declarations: a misspelt variable would only fail at evaluation, if at all."""
    bound = {tokens[i + 2].text for i, t in enumerate(tokens[:-2])
             if t.text in MACROS and i and tokens[i - 1].text == "." and tokens[i + 1].text == "("}
    for i, tok in enumerate(tokens):
        if tok.kind != "ident" or (i and tokens[i - 1].text == "."):
            continue
        if i + 1 < len(tokens) and tokens[i + 1].text == "(":
            continue
        if tok.text not in declared and tok.text not in bound and tok.text not in _VALUE_NAMES:
            raise CelError(f"undeclared reference to {tok.text!r}")


def _refuse_unsupported(tokens: list[Token]) -> None:
    for i, tok in enumerate(tokens):
        prev = tokens[i - 1].text if i else ""
        if tok.text == "?" and prev in (".", "["):
            raise CelError("optional field selection (.? / [?]) is not supported by the cel-python backend")
        if tok.kind == "ident" and prev != "." and tok.text in _UNSUPPORTED_ROOTS:
            raise CelError(f"{_UNSUPPORTED_ROOTS[tok.text]} ({tok.text}) not supported by the cel-python backend")
        if tok.kind == "ident" and prev == "." and tok.text in _UNSUPPORTED_METHODS:
            raise CelError(f"{_UNSUPPORTED_METHODS[tok.text]} ({tok.text}) not supported by the cel-python backend")


class _Evaluator(Evaluator):
    """cel-python's has() answers false for any error inside; CEL (cel-go, so Kubernetes) only tests
    the last field: `has(a.b.c)` with `a.b` missing is an error, with `a.b` null or a scalar false."""

    def macro_has_eval(self, exprlist: lark.Tree) -> Any:
        node = exprlist.children[0] if exprlist.children else None
        while isinstance(node, lark.Tree) and node.data != "member_dot" and len(node.children) == 1:
            node = node.children[0]
        if not (isinstance(node, lark.Tree) and node.data == "member_dot"):
            return celpy.CELEvalError("has() needs a field selection, e.g. has(object.spec)", TypeError, ())
        target = self.visit(node.children[0])
        if isinstance(target, celpy.CELEvalError):
            return target
        if isinstance(target, Mapping):
            return celtypes.BoolType(celtypes.StringType(node.children[1].value) in target)
        if isinstance(target, list):
            return celpy.CELEvalError("has(): a list has no fields", TypeError, ())
        return celtypes.BoolType(False)

    def sub_evaluator(self, ast: lark.Tree) -> Evaluator:
        return _Evaluator(ast, activation=self.activation)  # macro bodies get the same has()


class _Runner(celpy.InterpretedRunner):
    def evaluate(self, context: Any) -> Any:
        return _Evaluator(ast=self.ast, activation=self.new_activation()).evaluate(context)


def _index(container: Any, key: Any) -> Any:
    """`list[i]` for 0 <= i < size only: Python's indexing reads a negative index from the end, where CEL (and
    the C++ runtime) has an index error."""
    if isinstance(container, celpy.CELEvalError):
        return container
    if isinstance(container, list) and isinstance(key, int) and not isinstance(key, bool) and key < 0:
        return celpy.CELEvalError(f"index out of range: index={key} size={len(container)}", IndexError, ())
    return base_functions["_[_]"](container, key)


def _string(value: Any, *rest: Any) -> Any:
    """CEL's string() converts scalars only (cel-python renders lists and maps as Python repr), and a
    double prints in the shortest form, `4380` not `4380.0`, as cel-go and cel-cpp print it."""
    if isinstance(value, celpy.CELEvalError):
        return value
    if isinstance(value, Mapping) and value.get(TAG) in STRING_CONVERTIBLE and "text" in value:
        return celtypes.StringType(value["text"])   # Kubernetes' string(ip), string(cidr)
    if isinstance(value, (Mapping, list)):
        return celpy.CELEvalError(f"no matching overload for string({describe(from_cel(value))})", TypeError, ())
    if isinstance(value, celtypes.BoolType):
        return celtypes.StringType("true" if value else "false")
    if isinstance(value, celtypes.DoubleType) and float(value).is_integer() and abs(float(value)) < 1e21:
        return celtypes.StringType(str(int(float(value))))
    return base_functions["string"](value, *rest)


def _equality(negate: bool) -> Callable[[Any, Any], Any]:
    """CEL heterogeneous equality: values of different types are unequal (cel-python raises instead)."""
    def compare(a: Any, b: Any) -> Any:
        for arg in (a, b):
            if isinstance(arg, celpy.CELEvalError):
                return arg
        return celtypes.BoolType(cel_equal(from_cel(a), from_cel(b)) != negate)
    return compare


def _nested_error(value: Any) -> celpy.CELEvalError | None:
    if isinstance(value, celpy.CELEvalError):
        return value
    children = value.values() if isinstance(value, Mapping) else value if isinstance(value, list) else ()
    for child in children:
        found = _nested_error(child)
        if found is not None:
            return found
    return None


def _converted(activation: Mapping[str, Any]) -> dict[str, Any]:
    return {k: to_cel(v) for k, v in activation.items()}


_STRING_TYPE = "__qm_string_type"


def _string_type_names(source: str, tokens: list[Token]) -> str:
    """`string` as a type (`type(x) == string`), not a call, names the string type: our `string()` overrides
    cel-python's function of that name, and its identifier then resolved to the function, so the comparison
    was false."""
    parts, last = [], 0
    for i, token in enumerate(tokens):
        called = i + 1 < len(tokens) and tokens[i + 1].text == "("
        if token.kind == "ident" and token.text == "string" and not called and not (i and tokens[i - 1].text == "."):
            parts += [source[last:token.start], _STRING_TYPE]
            last = token.end
    return "".join(parts) + source[last:] if parts else source


class PyProgram:
    __slots__ = ("_program", "_namespaces")

    def __init__(self, program: Any, namespaces: Mapping[str, Any]) -> None:
        self._program, self._namespaces = program, namespaces

    def serialized(self) -> bytes | None:
        return None  # cel-python keeps a parse tree of its own, not a checked one

    def run_strict(self, activation: Mapping[str, Any], shared: Any) -> Any:
        return self.run(activation, shared)  # no cheaper path here

    def run(self, activation: Mapping[str, Any], shared: Any = None) -> Any:
        """`shared` (an Activation): the values are converted once for all the expressions of a request,
        about half of a simple expression's cost here (`load-tests/bench_cel.py`)."""
        _SPENT.steps = 0
        if shared is None:
            data = _converted(activation)
        else:  # per environment, as its namespaces are: the key is theirs
            data = dict(shared.cached(("cel-python", id(self._namespaces)), lambda: _converted(activation)))
        data.update(self._namespaces)
        try:
            result = self._program.evaluate(data)
        except _Budget:
            stopped = cost.why_stopped()  # a library call's cost, or else the comprehension steps
            raise CelError(stopped or f"Iteration budget exceeded ({ITERATION_BUDGET} comprehension steps)") from None
        except CelError:
            raise
        except Exception as exc:  # cel-python raises plain Python errors on some type mismatches
            raise CelError(str(exc) or type(exc).__name__) from None
        if isinstance(result, celpy.CELEvalError):
            raise CelError(str(result.args[0] if result.args else result)[:300])
        nested = _nested_error(result)
        if nested is not None:  # cel-python leaves errors inside list and map literals
            raise CelError(str(nested.args[0] if nested.args else nested)[:300])
        return plain(from_cel(result))


class PyBackend:
    name = "cel-python"

    def __init__(self) -> None:
        self._env = celpy.Environment(runner_class=_Runner)
        self._functions: dict[str, dict[str, Any]] = {}
        self._namespaces: dict[str, dict[str, Any]] = {}

    def _prepare(self, spec: EnvSpec) -> tuple[dict[str, Any], dict[str, Any]]:
        if spec.name not in self._functions:
            overloads = [o for lib in spec.libraries for o in lib.overloads]
            by_short: dict[str, list[Overload]] = {}
            namespaces = {}
            for overload in overloads:
                ns, _, short = overload.name.rpartition(".")
                by_short.setdefault(short, []).append(overload)
                if ns:
                    namespaces[ns] = to_cel({_NS: ns})
            functions = {short: _dispatcher(short, group) for short, group in by_short.items()}
            functions[_TICK] = _tick
            functions["string"] = _string
            functions["_[_]"] = _index
            functions["_==_"], functions["_!=_"] = _equality(False), _equality(True)
            self._functions[spec.name], self._namespaces[spec.name] = functions, namespaces
        return self._functions[spec.name], self._namespaces[spec.name]

    def compile(self, spec: EnvSpec, source: str) -> PyProgram:
        tokens = tokenize(source)
        _refuse_unsupported(tokens)
        functions, namespaces = self._prepare(spec)
        known = spec.function_names
        _refuse_unknown_calls(tokens, known | frozenset(n.rpartition(".")[2] for n in known), namespaces)
        _refuse_undeclared(tokens, frozenset(spec.variables) | frozenset(namespaces))
        source = _string_type_names(source, tokens)
        try:
            ast = self._env.compile(add_iteration_ticks(source, tokenize(source), _TICK))
            program = self._env.program(ast, functions=functions)
        except Exception as exc:
            raise CelError(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__) from None
        return PyProgram(program, {**namespaces, _STRING_TYPE: celtypes.StringType})
