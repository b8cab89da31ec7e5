"""The fast path of a validating policy: its match conditions and validations as ONE CEL program.

Per request a ValidatingPolicy (reference path: `validating.ValidatingPolicy._evaluate`) evaluates its
match conditions, then its validations in order, each a separate runtime call with Python glue around
it. For the common case, the same decision is one call of a program compiled once per policy variant:

    cel.bind(<the variables the conditions and validations read>,
      ((c1) && (c2) && ...) ? (!(v1) ? 1 : !(v2) ? 2 : ... : 0) : -1)

-1: the match conditions are false (skip); 0: every validation holds (pass); k: validation k-1 is the
first false one (fail). It gives a value only where the reference path gives that same decision:

- match conditions: CEL's `&&` is false if any operand is false (errors and non-bools included), an
  error if none is false but one is an error or not a bool, else true (cel-spec, "commutative logical
  operators"). The reference's order is the same: any false skips, otherwise an error is an error;
  so `false` here is the reference's skip, and an error here is re-run by the reference.
- validations: the ternaries evaluate them in order and stop at the first false one, as the reference
  does; a validation that errors or is not a bool makes `!`/`?:` an error.
- variables are folded with cel.bind (see webhook.cel.inline): only pure ones, each computed in the
  runtime; an unread failing variable is no error, a read one is, as in the reference's lazy map.
- budgets: the runtime's comprehension budget now covers the whole program; running out is an error.
- binds only around the whole program: cel-expr-python (cel-cpp) initialises a cel.bind lazily in a
  slot, and one evaluated after a comprehension at the same nesting level finds the slot that
  comprehension left filled and reads its last element instead of its own value (a wrong value, not an
  error: `[[1], [2, 3]].exists(x, true) ? cel.bind(v, [0], v.size()) : 0` gives 2). So no bind comes
  after a condition here; a group joins policies with every member's binds hoisted around the list of
  their bodies (fusedgroup). A policy whose own text has a `cel.bind` (or an identifier of the generated
  kind, `qm__...`) has no fused program (`hazards`): its bind could follow a condition's comprehension.

Any error, whatever it is, falls back to the reference path, which then produces the exact result and
message; so do a failing validation with a messageExpression, a policy with PolicyExceptions, audit
annotations, expressions calling lookups or effectful functions (they must run once, in the reference
path), and the pure-Python backend (no cel.bind). The pass/skip/fail results depend on nothing in the
request: they are built once per variant. The policy's timeoutSeconds deadline starts when its
evaluation starts (see Scope); the one call here starts at that moment, so it is never past it, and a
call that itself ran past it is not taken (`run`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from webhook.cel import Activation, CelCompiler, CelError
from webhook.cel.inline import PREFIX, fold, nest, pure
from webhook.cel.source import bind_count, tokenize
from webhook.cel.to_python import PythonProgram, Refused, compile_tree
from webhook.families.cel.scope import ALL, Expr, Variables
from webhook.model.activation import admission_activation
from webhook.model.policy import EvalContext, ValidationOutcome

_ACTIVATION = "cel-family.fused-activation"  # this module's entry in the request's EvalContext memo
SKIP = -1
REFERENCE: Any = object()  # a decision whose result only the reference path can build (a message expression)
_UNCOMPILED: Any = object()


@dataclass(eq=False)
class Fused:
    """One variant's decision program and the outcome for each value it can return (None: take the
    reference path for that value, e.g. a failing validation whose message is an expression)."""

    body: str  # the decision expression, variables read by their bound names (inline.PREFIX + name)
    bound: tuple[tuple[str, str], ...]  # (bound name, value text) in evaluation order: bound around `body`
    env: str
    outcomes: Mapping[int, ValidationOutcome | None]
    cel: CelCompiler
    _program: Any = field(default=_UNCOMPILED, repr=False)
    _python: Any = field(default=_UNCOMPILED, repr=False)

    @property
    def source(self) -> str:
        """The program's text, variables bound in."""
        return nest(self.body, self.bound)

    @property
    def program(self) -> Any:
        """The CelProgram, compiled on first use: None if it does not compile in its plain form (the
        reference path then has the faithful one)."""
        if self._program is _UNCOMPILED:
            self._program = self.cel.compile_bound(self.source, [], self.env, strict=True)
        return self._program

    @property
    def python(self) -> PythonProgram | None:
        """The program's Python form (webhook.cel.to_python), compiled on first use; None where it has none."""
        if self._python is _UNCOMPILED:
            program = self.program
            self._python = compile_tree(program.tree(), PROGRAM_VARIABLES) if program is not None else None
        return self._python  # type: ignore[no-any-return]


def _wrap(text: str) -> str:
    # newlines: a piece may end in a `// comment`
    return f"(\n{text}\n)"


def _bindings(variables: Variables, names: Sequence[str]) -> list[tuple[str, str]]:
    return [(n, variables.exprs[n].text) for n in names]


GENERATED = "qm__"  # every identifier the fast path generates starts so (inline.PREFIX; fusedgroup's renames)
assert PREFIX.startswith(GENERATED)


def hazards(text: str) -> bool:
    """Text that cannot be placed in a generated program: a user's own `cel.bind` (after a comprehension
    at its level, here or in a program joining this one, cel-expr-python misreads it: module docstring),
    or an identifier of the generated kind (`qm__...`: the program's bound names must be its own)."""
    try:
        tokens = tokenize(text)
    except ValueError:
        return True
    return bind_count(tokens) > 0 or any(t.kind == "ident" and t.text.startswith(GENERATED) for t in tokens)


def program_text(conditions: Sequence[Expr], validations: Sequence[Expr], variables: Variables,
                 or_value_compat: bool) -> tuple[str, list[tuple[str, str]]] | None:
    """(the decision expression, the variables to bind around it) or None when it cannot be fused."""
    found = _program_text(conditions, validations, variables, or_value_compat)
    return None if isinstance(found, str) else found


def _program_text(conditions: Sequence[Expr], validations: Sequence[Expr], variables: Variables,
                  or_value_compat: bool) -> tuple[str, list[tuple[str, str]]] | str:
    """program_text, or why there is none."""
    pieces = [*conditions, *validations]
    if not validations:
        return "no validations"
    if any(ALL in e.refs for e in pieces):
        return "an expression reads `variables` as a whole"
    if any(not pure(e.text) for e in pieces):
        return "an expression calls a lookup or an effectful function (it must run once, in the reference path)"
    if any(hazards(e.text) for e in pieces):
        return "an expression has a cel.bind of its own or a `qm__` identifier"
    # every variable bound around the whole program (cel.bind is lazy: one the conditions do not need is
    # computed only if a validation reads it). Never a bind after the conditions: cel-expr-python would
    # read a slot that a comprehension of the conditions left filled (see the module docstring)
    everything = variables.needed(frozenset().union(*(e.refs for e in pieces)))
    if any(not pure(variables.exprs[n].text) or hazards(variables.exprs[n].text) for n in everything):
        return "a variable it reads calls a lookup or has a cel.bind of its own"
    chain = " : ".join(f"!{_wrap(v.text)} ? {i}" for i, v in enumerate(validations, 1)) + " : 0"
    if conditions:
        chain = f"({' && '.join(_wrap(c.text) for c in conditions)}) ? ({chain}) : {SKIP}"
    return fold(chain, _bindings(variables, everything), or_value_compat)


def compile_fused(cel: CelCompiler, conditions: Sequence[Expr], validations: Sequence[Expr], variables: Variables,
                  outcome: Callable[[int], ValidationOutcome | None]) -> Fused | None:
    """None when the variant has no fast path (then the reference path is the only one)."""
    found = fuse(cel, conditions, validations, variables, outcome)
    return found if isinstance(found, Fused) else None


def fuse(cel: CelCompiler, conditions: Sequence[Expr], validations: Sequence[Expr], variables: Variables,
         outcome: Callable[[int], ValidationOutcome | None]) -> Fused | str:
    """The variant's fused program (its text; compiled on first use), or why it has none."""
    if cel.backend != "cel-expr-python":
        return f"the {cel.backend} backend has no cel.bind"
    if not validations:
        return "no validations"
    env = validations[0].program.env
    if any(e.program.env != env for e in (*conditions, *validations)):
        return "its expressions compile in different environments"
    from webhook.cel.envs import env_spec

    found = _program_text(conditions, validations, variables, env_spec(env).or_value_compat)
    if isinstance(found, str):
        return found
    body, bound = found
    return Fused(body, tuple(bound), env, {code: outcome(code) for code in range(SKIP, len(validations) + 1)}, cel)


def activation(ctx: EvalContext, obj: Mapping[str, Any] | None, exceptions: Mapping[str, Any],
               share: Callable[[EvalContext, Mapping[str, Any]], Activation]) -> Activation:
    """The request's shared activation (the very one the reference path would use, so a fallback does not
    convert the request again), looked up once per request rather than once per policy."""
    found = ctx.memo.get(_ACTIVATION)
    if found is not None and found[0] is obj and found[1] is exceptions:
        return found[2]
    values = ctx.activation(obj)
    values["exceptions"] = exceptions
    shared = share(ctx, values)
    ctx.memo[_ACTIVATION] = (obj, exceptions, shared)
    return shared


def reads_request(programs: Sequence[Any]) -> bool:
    """Whether `programs` (CelPrograms) may read the `request` variable: whether their text names it at all
    (an identifier `request` anywhere, a field of that name included). Text that does not tokenize: yes."""
    try:
        return any(t.kind == "ident" and t.text == "request" for program in programs
                   for t in tokenize(program.expression))
    except ValueError:
        return True


# what `program_values` may hold: the variables a part's Python form may read
PROGRAM_VARIABLES = frozenset({"object", "oldObject", "namespaceObject", "request", "exceptions"})


def program_values(ctx: EvalContext, obj: Mapping[str, Any] | None, exceptions: Mapping[str, Any],
                   with_request: bool) -> dict[str, Any]:
    """The variables programs that may (or may not: `with_request`, see `reads_request`) read `request` run
    on: the request's shared activation's values, without the `request` variable unless they may read it
    (building it is work per request; the shared activation, built only if a fallback needs it, has it). Their
    value is the same on them: a variable the text never names is never read (and if it were, its absence is an
    error, and an error is no decision: every caller falls back)."""
    if with_request:
        values = ctx.activation(obj)  # the request variable: built once per request (EvalContext.memo)
    elif ctx.request is None:
        raise ValueError("this evaluation context has no admission request")
    else:
        values = admission_activation(ctx.request, None, obj, ctx.namespace)
        del values["request"]
    values["exceptions"] = exceptions
    return values


def run_python(program: PythonProgram, values: Mapping[str, Any], budget: float) -> Any:
    """`run` of a program's Python form (webhook.cel.to_python) on `program_values`: Refused where it cannot
    tell CEL's value, and past the budget as `run` is."""
    started = time.monotonic()
    value = program.evaluate(values)
    if time.monotonic() - started > budget:
        raise Refused
    return value


def run(program: Any, shared: Activation, budget: float) -> Any:
    """The program's value; CelError also when it ran longer than `budget` (the policy's timeoutSeconds):
    the reference path checks the deadline before each expression, so past it, it may have refused one
    that ran here. Never in practice (the comprehension budget stops an expression within milliseconds),
    but then the reference path, not this one, says what happens."""
    started = time.monotonic()
    value = program.evaluate_strict(shared)
    if time.monotonic() - started > budget:
        raise CelError("the fused program ran past the policy's timeoutSeconds")
    return value


def decide(fused: Fused, shared: Activation, budget: float) -> ValidationOutcome | None:
    """The prebuilt outcome, or None: the reference path decides (any error, any unexpected value). The
    program's Python form first, where it has one (webhook.cel.to_python): then the runtime neither converts
    the request nor evaluates, unless that form cannot tell."""
    program = fused.program
    if program is None:
        return None
    python = fused.python
    try:
        if python is None:
            code = run(program, shared, budget)
        else:
            try:
                code = run_python(python, shared.values, budget)
            except Refused:
                code = run(program, shared, budget)
    except Exception:  # an error of any kind: the reference path gives its exact outcome and message
        return None
    if type(code) is not int:
        return None
    return fused.outcomes.get(code)
