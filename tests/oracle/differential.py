"""Our three evaluation paths against the Kubernetes CEL oracle, one case at a time, with a tally.

The paths: the default runtime (cel-expr-python, `CelProgram.evaluate`), the Python form of its checked tree
(webhook.cel.to_python: counted only where it gives a value; where it refuses, the runtime decides, as in
production) and the reference backend (cel-python). Each must give Kubernetes' value, type for type, or fail
where Kubernetes fails (at compile time or at run time, either counts as an error). cel-python lacks some of
CEL's syntax (optionals, cel.bind, the math and base64 extensions) and refuses such expressions at compile
time: those are counted apart, as `lacking`, and listed in docs/cel-differences.md.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from tests.cel.differential import OfflineLookups
from tests.oracle.client import CelOracle, OracleAnswer
from tests.oracle.typed import Typed, from_ours, without_uint
from webhook.cel import CelCompiler, CelError
from webhook.cel.to_python import Refused, compile_tree

PATHS = ("cel-expr-python", "to_python", "cel-python")
COMPILERS = {"cel-expr-python": CelCompiler("cel-expr-python"), "cel-python": CelCompiler("cel-python")}
ROOTS = frozenset({"object", "oldObject", "namespaceObject", "request", "params", "variables"})
# our environment for each of the oracle's
OUR_ENV = {"validating": "admission", "mutating": "mutating"}
LACKING = "not supported by the cel-python backend"


@dataclass(frozen=True)
class Outcome:
    value: Typed | None
    error: str = ""

    def agrees(self, oracle: OracleAnswer) -> bool:
        if oracle.value is None or self.value is None:
            return oracle.value is None and self.value is None
        return self.value == without_uint(oracle.value) or self.value == oracle.value


@dataclass(frozen=True)
class Kept:
    """A difference kept on purpose (docs/cel-differences.md): expressions matching `pattern`, on `paths`, where our
    outcome's text matches `ours` (when given)."""
    pattern: str
    why: str
    paths: tuple[str, ...] = PATHS
    ours: str = ""


# Each row is a row of docs/cel-differences.md; a difference that matches none fails the differential.
KEPT = (
    Kept(r"^(?!.*getMilliseconds).*(duration\(|timestamp\()", "durations and timestamps on the cel-python backend (and "
         "the Python form) are Python's timedelta and datetime: microseconds, not nanoseconds",
         paths=("cel-python", "to_python")),
    Kept(r"string\(timestamp\(", "a timestamp's string is UTC: both runtimes parse a timestamp into UTC, its offset "
         "dropped"),
    Kept(r"string\(duration\(", "the C++ runtime's string() of a duration writes 3, 6 or 9 fraction digits "
         "(1.500s), cel-go's the fewest (1.5s): the same value; a built-in a library cannot replace",
         paths=("cel-expr-python",), ours=r"^\('string'"),
    Kept(r"quantity\(", "a quantity keeps one canonical text for equality: '1000' where Kubernetes writes '1k', "
         "'12582912' for '12Mi'; isInteger/asInteger read the exact value"),
    Kept(r"\{\s*(\S+)\s*:.*,\s*\1\s*:", "a map literal with a repeated key is a runtime error in the C++ runtime "
         "and cel-python; Kubernetes keeps the last value"),
    Kept(r"\)\s*(<|<=|>|>=)\s*\(|\d\s*(<|<=|>|>=)\s*\d", "int, uint and double compared with each other on "
         "cel-python: its evaluator refuses the comparison of request values of different numeric types",
         paths=("cel-python",)),
    Kept(r"sets\.\w+\(object|\.map\(", "our static cost estimate refuses at compile time what Kubernetes refuses "
         "when the policy is created (the oracle evaluates without the estimate)"),
    Kept(r"\.orValue\(", "orValue on a plain (not optional) value: cel-go returns the value, ours has only the "
         "optional overload outside Kyverno's environment", ours=r"No matching overloads found : orValue|orValue"),
    Kept(r"\]\.(sortBy|flatten)\(", "a literal list's element type is lost to our map/filter range guard (sortBy's keys) "
         "or not declared (flatten wants list(list(T))): Kubernetes refuses a type error there at compile time, "
         "ours evaluates", ours=r"^\('list'"),
    Kept(r",\s*[}\]]", "cel-python's grammar refuses a trailing comma in a map or list literal (the reference backend "
         "only; the default backend accepts it as Kubernetes does)", paths=("cel-python",), ours=r"does not compile"),
)


def kept(path: str, expression: str, ours: str) -> Kept | None:
    return next((k for k in KEPT if path in k.paths and re.search(k.pattern, expression)
                 and (not k.ours or re.search(k.ours, ours))), None)


@dataclass
class Tally:
    evaluations: Counter = field(default_factory=Counter)   # per path: evaluations compared with the oracle
    lacking: Counter = field(default_factory=Counter)       # per path: refused as a feature the backend lacks
    refused: int = 0                                        # Python form: the runtime decided instead
    differences: list[str] = field(default_factory=list)
    kept: Counter = field(default_factory=Counter)          # per reason: differences kept on purpose

    def summary(self) -> str:
        paths = ", ".join(f"{p}: {self.evaluations[p]}" for p in PATHS)
        return (f"evaluations compared with Kubernetes per path: {paths}; the Python form refused {self.refused} "
                f"(the runtime then decides); cel-python lacked the syntax of {self.lacking['cel-python']}; "
                f"{sum(self.kept.values())} differences kept on purpose (docs/cel-differences.md), "
                f"{len(self.differences)} unexplained")


def _typed_result(program: Any, expression: str, env: str, activation: Mapping[str, Any], compiler: CelCompiler) -> Typed:
    value = program.evaluate(activation, OfflineLookups(), generated=[])
    typed = from_ours(value)
    if typed[0] == "int":
        # plain results carry no uint: ask the runtime what the top-level integer is
        probe = compiler.compile(f"type({expression}) == uint", env)
        if probe.evaluate(activation, OfflineLookups(), generated=[]) is True:
            typed = ("uint", typed[1])
    return typed


def ours(path: str, expression: str, env: str, activation: Mapping[str, Any]) -> Outcome | None:
    """The path's outcome; None where it does not tell (the Python form refusing, cel-python lacking syntax)."""
    compiler = COMPILERS["cel-expr-python" if path == "to_python" else path]
    try:
        program = compiler.compile(expression, env)
    except CelError as exc:
        if path == "cel-python" and LACKING in str(exc):
            return None
        return Outcome(None, f"compile: {exc}")
    if path == "to_python":
        python = compile_tree(program.tree(), ROOTS)
        if python is None:
            return None
        try:
            return Outcome(from_ours(python.evaluate(activation)))
        except Refused:
            return None
    try:
        return Outcome(_typed_result(program, expression, env, activation, compiler))
    except CelError as exc:
        if path == "cel-python" and LACKING in str(exc):
            return None
        return Outcome(None, f"runtime: {exc}")


def variable_values(variables: Sequence[tuple[str, str]], env: str, activation: Mapping[str, Any]) -> dict[str, Any]:
    """Variables in order, computed by the default runtime for every path (each variable's own expression is
    compared as an expression of its own), so that one path's missing syntax does not hide the next expression."""
    compiler = COMPILERS["cel-expr-python"]
    values: dict[str, Any] = {}
    for name, expression in variables:
        try:
            program = compiler.compile(expression, env)
            values[name] = program.evaluate({**activation, "variables": values}, OfflineLookups(), generated=[])
        except CelError:
            pass
    return values


def compare(oracle: CelOracle, tally: Tally, expression: str, bindings: Mapping[str, Any],
            variables: Sequence[tuple[str, str]] = (), oracle_env: str = "validating",
            paths: Sequence[str] = PATHS) -> None:
    expected = oracle.evaluate(expression, bindings, variables, env=oracle_env)
    env = OUR_ENV[oracle_env]
    activation = {**bindings, "variables": variable_values(variables, env, bindings) if variables else {}}
    for path in paths:
        outcome = ours(path, expression, env, activation)
        if outcome is None:
            if path == "to_python":
                tally.refused += 1
            else:
                tally.lacking[path] += 1
            continue
        tally.evaluations[path] += 1
        if not outcome.agrees(expected):
            reason = kept(path, expression, outcome.error or repr(outcome.value))
            if reason is not None:
                tally.kept[reason.why] += 1
                continue
            told = expected.value if expected.value is not None else f"{expected.error} error: {expected.message[:160]}"
            ours_told = outcome.value if outcome.value is not None else outcome.error[:200]
            tally.differences.append(f"[{path}] {expression!r}: Kubernetes {told!r}, ours {ours_told!r}")
