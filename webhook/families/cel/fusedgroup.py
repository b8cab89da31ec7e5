"""One CEL program for all the fast-path ValidatingPolicies that a request matches.

The engine asks policies one at a time. The first member of a group it asks about a request evaluates
the fused programs (webhook.families.cel.fused) of every member that matches the request in one runtime
call, and leaves the decisions in the request's EvalContext memo for the others: one call per request
instead of one per policy. The joined program hoists every member's variables to the top:

    cel.bind(qm__j0_a, (A), cel.bind(qm__j1_b, (B), cel.bind(qm__j2_c, (C), [(body0), (body1), ...])))

Why this shape: cel-expr-python (cel-cpp) initialises a `cel.bind` lazily in a slot, and one evaluated
after a comprehension at the same nesting level reads the slot that comprehension left filled (a wrong
value: docs/cel.md). Joining the members' own programs side by side (`[cel.bind(...), cel.bind(...)]`)
put members' binds after earlier members' comprehensions; that broke. Here no bind is inside a list
element: every bind encloses all the comprehensions, each in its own slot (tests/cel/test_bind_slots.py
checks random programs of this shape against the pure-Python reference). A member whose text has a
`cel.bind` of its own has no fused program at all (fused.hazards), so no member brings a bind of its own.

Renaming: each member's bound names `qm__v_<name>` become `qm__j<k>_<name>`, k the binding's place in
the joined program (token-based: strings and comments are never touched; `<k>_` then an identifier is
unambiguous), so members cannot read each other's variables; a value that is token for token one
already bound shares that binding (see `joined_text`). No user text holds an identifier starting `qm__` (fused.hazards), so renamed names
capture nothing of the user's. Each element then has the value of the member's own program: the binds
are lazy (a variable no element reads is never computed), pure (no lookups, no effects), and each
element reads only its own member's names.

Exactness: a list is an error when any element is one; then no decision is taken from the group and
every member takes its own path (its own fused program, then the reference). Evaluating a member early
changes nothing; a member whose turn never comes (the engine stops asking) only costs time. Members:
ValidatingPolicies without exceptions whose matching reads only the request's resource and operation
(`static_match`), so which members a request matches is fixed per (resource, operation, background
scan): a `GroupPlan`, built once, over joined programs compiled once per set of members (those of a request
matching them all are compiled with the group, at load). The runtime's comprehension budget covers the
joined program as a whole: when it fails (the budget, an error of one member) every member goes its own way.

Dispatch: the family builds the group when it plans the policy set (webhook.families.cel.plan), and each
member's route names the group and the member's slot. The engine asks policies one at a time; the group keeps
one Entry per request in the EvalContext memo (under the group itself): the plan for the request's key, and
the decisions by member slot, taken when the first member asks. The others read them: one memo lookup each.

Python: a part whose members' programs all compile to Python (webhook.cel.to_python; the members that do are
joined apart from those that do not) is first evaluated as Python on the request's objects as they are: each
member it tells is decided, each it cannot (NOT_TOLD: an error, or what it does not model) goes its own way; if
it cannot tell at all (a shared variable's error, its iteration budget), the runtime evaluates the part as
below, on the request's shared activation, whose conversion then serves any fallback too. The Python form
reads values that hold `request` only if the part's text names it (fused.program_values).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from webhook.cel import CelCompiler
from webhook.cel.inline import PREFIX
from webhook.cel.source import canonical, tokenize
from webhook.cel.to_python import PythonProgram, Refused, compile_tree
from webhook.families.cel import fused
from webhook.families.cel.base import NO_EXCEPTIONS, Variant, request_key, shared_activation
from webhook.families.cel.tiers import FastPaths
from webhook.model.policy import EvalContext, ValidationOutcome
from webhook.model.review import AdmissionRequest

MAX_PLANS = 64     # (resource, operation, scan) combinations remembered


@dataclass(frozen=True, eq=False)
class Part:
    """Members decided by one joined program (one runtime call)."""

    tables: tuple[Mapping[int, Any], ...]  # per member: what each value of its element decides
    slots: tuple[int, ...]  # per member: its place in the group (FusedGroup.members)
    program: Any  # CelProgram of the joined list
    python: PythonProgram | None = None  # the same tree as Python (webhook.cel.to_python), when it compiles there


# members (slot, program), their joined program, and its Python form
Joined = tuple[tuple[tuple[int, fused.Fused], ...], Any, "PythonProgram | None"]


@dataclass(frozen=True, eq=False)
class GroupPlan:
    """What a (resource, operation, scan) key's requests evaluate: usually one Part (the runtime's parser
    limits nesting: a set of members too deep for one program is split, see FusedGroup._parts)."""

    parts: tuple[Part, ...]
    budget: float = 0.0  # the members' smallest timeoutSeconds (see fused.run)
    reads_request: bool = True  # whether the parts may read the `request` variable (fused.reads_request)


@dataclass(frozen=True, eq=False)
class Member:
    """What the group reads of a member policy (it never holds the policy: the policy holds the group)."""

    slot: int  # its place in the group
    variants: tuple[Variant, ...]
    programs: tuple[fused.Fused | None, ...]  # per variant: its fused program
    background: bool
    timeout: float

    def variant(self, request: AdmissionRequest, ctx: EvalContext) -> int | None:
        """The index of the variant the request matches (a member matches on resource and operation alone)."""
        return next((i for i, v in enumerate(self.variants) if v.match.matches(request, request.object, ctx.namespace)),
                    None)


class Entry:
    """The group on one request (in its EvalContext memo): the plan, found once for all the members'
    validate(), and the joined programs' decisions (slot -> outcome), taken on first need."""

    __slots__ = ("request", "plan", "decided")

    def __init__(self, request: AdmissionRequest, plan: GroupPlan) -> None:
        self.request = request
        self.plan = plan
        self.decided: dict[int, Any] | None = None


_INTS = frozenset({int})


def _table(program: fused.Fused) -> dict[int, Any]:
    """What each value of the member's program decides (fused.REFERENCE: the reference path builds it)."""
    return {code: fused.REFERENCE if outcome is None else outcome for code, outcome in program.outcomes.items()}


def rename(text: str, names: Mapping[str, str]) -> str:
    """`text` with each generated name (inline.PREFIX...) replaced by `names[it]`, token by token (strings
    and comments untouched). KeyError for one not in `names` (never expected: every read name is bound)."""
    out, last = [], 0
    for token in tokenize(text):
        if token.kind == "ident" and token.text.startswith(PREFIX):
            out += [text[last:token.start], names[token.text]]
            last = token.end
    out.append(text[last:])
    return "".join(out)


def _normal(text: str) -> str:
    """The text's tokens without whitespace, comments and parentheses that change nothing: equal for texts
    of one expression written alike (three policies that concatenate a pod's containers, parenthesised
    each its own way, share one binding, and the runtime concatenates the lists once, not three times)."""
    return canonical(tokenize(text))


def joined_text(members: Sequence[fused.Fused]) -> str:
    """Every member's variables bound around the list of the members' bodies. Member i's names become
    `qm__j<k>_<name>`; a variable whose value (its own reads renamed first) is token for token one already
    bound shares that binding: the same pure expression of the same request (a member's reads of it are
    lazy; an error there is the error reading it alone gives), computed once, and fewer binds (the
    runtime's parser limits nesting)."""
    bound: list[tuple[str, str]] = []
    shared: dict[str, str] = {}  # normalised value -> its bound name
    bodies = []
    for program in members:
        names: dict[str, str] = {}  # the member's own bound names -> the joined program's
        for name, value in program.bound:
            value = rename(value, names)
            key = _normal(value)
            if key not in shared:
                shared[key] = f"{fused.GENERATED}j{len(bound)}_{name[len(PREFIX):]}"
                bound.append((shared[key], value))
            names[name] = shared[key]
        bodies.append(f"(\n{rename(program.body, names)}\n)")  # newlines: a piece may end in a `// comment`
    # the binds nest without parentheses around their bodies: the runtime's parser counts each level
    # (at most ~28 binds around a small body; with parentheses ~15)
    text = "[" + ",\n".join(bodies) + "]"
    for name, value in reversed(bound):
        text = f"cel.bind({name}, ({value}), {text})"
    return text


class FusedGroup:
    def __init__(self, members: Sequence[Member], cel: CelCompiler, tiers: FastPaths = FastPaths()) -> None:
        self.members = tuple(members)
        self.cel = cel
        self.tiers = tiers
        self._plans: dict[tuple[Any, ...], GroupPlan] = {}
        # the joined programs of a set of members, compiled once for every plan that has them; by (slot, id of
        # the member's program)
        self._joined: dict[tuple[tuple[int, int], ...], list[Joined]] = {}
        # what the first requests would compile: the joined programs over the members' first variants (those a
        # request matching them all, a Pod for the pod-security policies, evaluates)
        first: list[tuple[int, fused.Fused]] = []
        for member in self.members:
            fast = member.programs[0] if member.programs else None
            if fast is not None and _joins(first, fast):
                first.append((member.slot, fast))
        for joined in _by_python_form(first):
            self._joined_programs(joined)

    # The group itself is its key in a request's EvalContext memo (an Entry): one lookup per member and
    # request, hashed by identity.

    def entry(self, request: AdmissionRequest, ctx: EvalContext) -> Entry:
        """The group on this request: found (or made) once per request, whichever member asks first."""
        found = ctx.memo.get(self) if self.tiers.memo else None
        if found is None or found.request is not request:
            found = Entry(request, self._plan(request, ctx))
            if self.tiers.memo:
                ctx.memo[self] = found
        return found

    def outcome(self, slot: int, request: AdmissionRequest, ctx: EvalContext) -> Any:
        """The member's outcome as the group decided it, fused.REFERENCE, or None (not decided here)."""
        try:
            found = self.entry(request, ctx)
            decided = found.decided
            if decided is None:
                decided = found.decided = self.decide(found.plan, request, ctx)
            return decided.get(slot)
        except Exception:  # nothing decided here: a member's own routes will tell
            return None

    def decide(self, plan: GroupPlan, request: AdmissionRequest, ctx: EvalContext) -> dict[int, Any]:
        """slot -> outcome of the members the joined programs decided ({} when none, or on any error)."""
        try:
            return self._decide(plan, request, ctx)
        except Exception:  # nothing decided here: a member's own path (and the reference) will tell
            return {}

    def _decide(self, plan: GroupPlan, request: AdmissionRequest, ctx: EvalContext) -> dict[int, Any]:
        if not plan.parts:
            return {}
        # built for the parts alone: `request` only if they name it
        values = fused.program_values(ctx, request.object, NO_EXCEPTIONS.allowed, plan.reads_request)
        shared = None  # the runtime's activation, built only if a part's Python form cannot tell
        decided: dict[int, Any] = {}
        for part in plan.parts:
            codes = None
            if part.python is not None:
                try:
                    codes = fused.run_python(part.python, values, plan.budget)
                except Refused:  # what the Python form does not model: the runtime tells
                    codes = None
            if codes is None:
                if shared is None:
                    # the request's shared activation: its conversion then serves any fallback too
                    shared = fused.activation(ctx, request.object, NO_EXCEPTIONS.allowed, shared_activation)
                try:
                    codes = fused.run(part.program, shared, plan.budget)
                except Exception:  # one member's error (or the budget): each member of the part goes its own way
                    continue
            if type(codes) is not list or len(codes) != len(part.tables):
                continue
            if set(map(type, codes)) <= _INTS:
                decided.update(zip(part.slots, map(dict.get, part.tables, codes)))
            else:  # an element that is not one of its program's int literals (never expected) decides nothing
                decided.update((slot, table.get(code)) for slot, table, code in zip(part.slots, part.tables, codes)
                               if type(code) is int)
        return decided

    def _plan(self, request: AdmissionRequest, ctx: EvalContext) -> GroupPlan:
        key = (request_key(request, ctx), ctx.background)
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= MAX_PLANS:  # requests name resources freely: keep it bounded
                self._plans.clear()
            try:
                plan = self._build(request, ctx)
            except Exception:  # never expected: the members go their own way for this key, built once
                plan = GroupPlan(())
            self._plans[key] = plan
        return plan

    def _build(self, request: AdmissionRequest, ctx: EvalContext) -> GroupPlan:
        members: list[tuple[int, fused.Fused]] = []
        budget = float("inf")
        for member in self.members:
            if ctx.background and not member.background:
                continue  # a background scan does not run it
            index = member.variant(request, ctx)
            fast = member.programs[index] if index is not None else None
            if fast is not None and _joins(members, fast):
                members.append((member.slot, fast))
                budget = min(budget, member.timeout)
        parts = tuple(part for joined in _by_python_form(members) for part in self._parts(joined))
        programs = [part.program for part in parts]
        return GroupPlan(parts, budget, reads_request=fused.reads_request(programs))

    def _parts(self, members: Sequence[tuple[int, fused.Fused]]) -> list[Part]:
        """The Parts deciding `members`, fresh for each plan over programs compiled once (see _joined_programs)."""
        return [Part(tuple(_table(fast) for _, fast in piece), tuple(slot for slot, _ in piece), program, python)
                for piece, program, python in self._joined_programs(members)]

    def _joined_programs(self, members: Sequence[tuple[int, fused.Fused]]) -> list[Joined]:
        """One joined program for `members`, or (too deep for the runtime's parser) one per half: compiled,
        and compiled to Python, once per set of members whatever plan has them."""
        if len(members) < 2:  # one program alone is the member's own
            return []
        key = tuple((slot, id(fast)) for slot, fast in members)  # the entry holds the programs: ids stay theirs
        found = self._joined.get(key)
        if found is None:
            program = self.cel.compile_bound(joined_text([fast for _, fast in members]), [], members[0][1].env,
                                             strict=True)
            if program is not None:
                python = compile_tree(program.tree(), fused.PROGRAM_VARIABLES, joined=True) if self.tiers.python else None
                found = [(tuple(members), program, python)]
            else:
                half = len(members) // 2
                found = self._joined_programs(members[:half]) + self._joined_programs(members[half:])
            if len(self._joined) >= MAX_PLANS:  # bounded as the plans are
                self._joined.clear()
            self._joined[key] = found
        return found

def _joins(members: Sequence[tuple[int, fused.Fused]], fast: fused.Fused | None) -> bool:
    """May a member's fast path join the others' program: it compiled (one that compiles only in its faithful
    form stays out), in the environment of the members before it."""
    return fast is not None and fast.program is not None and (not members or fast.env == members[0][1].env)


def _by_python_form(members: Sequence[tuple[int, fused.Fused]]) -> tuple[list[tuple[int, fused.Fused]], ...]:
    """The members whose programs compile to Python, then the others: each set is joined apart. The first
    set's joined program decides in its Python form, without the runtime (webhook.cel.to_python), whatever
    the others hold. (Each member's own Python form, compiled once, also serves it when it goes its own way:
    fused.decide.)"""
    return ([m for m in members if m[1].python is not None], [m for m in members if m[1].python is None])
