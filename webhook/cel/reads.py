"""Which parts of its root variables (`object`, `oldObject`) a compiled program can read.

The analysis runs over the tree the runtime compiled (webhook.cel.checked: macros and `cel.bind`
expanded into comprehensions, every rewrite applied). Each expression's abstract value is the set of
places of the roots it may be (`Ref`); how a value is used says what of those places the program can
observe (a trie, webhook.cel.trim.Need, per root). It must be sound: for every possible value of the
roots, the program gives the same result (or an error in both cases) on the trimmed roots, so it
over-approximates everywhere:

- a field select `x.f` / `x.?f` / `has(x.f)` reads key `f` of x (its presence at least; what the
  result is then used for says the rest); `orValue`, `value`, `optional.of`, `or`, the branches of
  `?:` pass their operand's places on (an optional is taken for its value: presence is what differs,
  and presence is kept);
- a comprehension over x reads x's elements (a map's keys: the map is then kept whole) and its length;
  the iteration variables are those elements; the accumulator is whatever its init and step may be (a
  fixed point, so `map`, `filter` and `cel.bind` follow their values); `size(x)` reads x's length
  (a list keeps its length, a map iterated or counted is kept whole);
- `a + b` and list literals build a list whose elements are the operands' places or their elements
  (`Ref.spread`): iterating it reads those elements, anything else reads them whole;
- anything else (an index `x[k]`, `==`, `in`, a function or method of any other name, a map literal,
  the program's result, a condition, an operand of `&&`/`||`/`!`) reads the whole value.
A tree this module does not recognise raises ValueError; callers then trim nothing.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from webhook.cel.checked import Call, Comprehension, Const, Ident, ListOf, Node, Select, Struct
from webhook.cel.trim import Need, TrimPlan
from webhook.model.quickinit import frozen_dataclass

MAX_FIXPOINT = 8    # rounds for an accumulator's places to settle; past it they are read whole
MAX_REFS = 256      # places one value may be; past it the analysis gives up (ValueError)

# A path segment: a field name, or EACH for the elements of a list (the keys of a map)
EACH = None
_PASS_ON = frozenset({"orValue", "or", "_?_:_"})  # results one of their operands (places of all of them)


@frozen_dataclass
class Ref:
    """A place a value may be: root variable `root` at `path`; `spread`: the value is a list whose
    elements are values at `path` (built by `+`, a list literal, `map` or `filter`)."""

    root: str
    path: tuple[str | None, ...]
    spread: bool = False


Refs = frozenset[Ref]
_NONE: Refs = frozenset()


class _Analysis:
    def __init__(self, roots: frozenset[str]) -> None:
        self.roots = roots
        self.needs: dict[str, Need] = {}

    # what of a place is read
    def need(self, ref: Ref) -> Need:
        node = self.needs.get(ref.root)
        if node is None:
            node = self.needs[ref.root] = Need()
        for segment in ref.path:
            node = node.element() if segment is EACH else node.field(segment)
        return node

    def whole(self, refs: Refs) -> Refs:
        for ref in refs:
            self.need(ref).whole = True
        return _NONE  # read whole: what is derived from it is kept whole too, nothing left to follow

    def elements(self, refs: Refs) -> Refs:
        """The elements of the values `refs` (their lengths and a map's keys are read)."""
        out = set()
        for ref in refs:
            if ref.spread:
                out.add(Ref(ref.root, ref.path))
            else:
                path = (*ref.path, EACH)
                self.need(Ref(ref.root, path))
                out.add(Ref(ref.root, path))
        return _bounded(out)

    def spread(self, refs: Refs) -> Refs:
        """`refs` as the elements of a list being built (a list literal)."""
        return self.whole(frozenset(r for r in refs if r.spread)) | _bounded(
            {Ref(r.root, r.path, True) for r in refs if not r.spread})

    def select(self, refs: Refs, name: str, test_only: bool) -> Refs:
        self.whole(frozenset(r for r in refs if r.spread))  # a select on a list built here: error or not, read whole
        out = set()
        for ref in refs:
            if not ref.spread:
                place = Ref(ref.root, (*ref.path, name))
                self.need(place)  # present or not: kept as it is (an absent key's error stays an error)
                out.add(place)
        return _NONE if test_only else _bounded(out)

    # the expression tree
    def value(self, node: Node, scope: Mapping[str, Refs]) -> Refs:
        if isinstance(node, Const):
            return _NONE
        if isinstance(node, Ident):
            if node.name in scope:
                return scope[node.name]
            if node.name in self.roots:
                place = Ref(node.name, ())
                self.need(place)
                return frozenset({place})
            qualified = node.name.lstrip(".").split(".")[0]
            if qualified in self.roots:  # never seen (the checker resolves `.object` to `object`): all of it
                return self.whole(frozenset({Ref(qualified, ())}))
            return _NONE  # another variable of the environment: not a root
        if isinstance(node, Select):
            return self.select(self.value(node.operand, scope), node.field, node.test_only)
        if isinstance(node, Call):
            return self.call(node, scope)
        if isinstance(node, ListOf):
            out: Refs = _NONE
            for element in node.elements:
                out |= self.spread(self.value(element, scope))
            return out
        if isinstance(node, Struct):
            for key, item in node.entries:
                if key is not None:
                    self.whole(self.value(key, scope))
                self.whole(self.value(item, scope))
            return _NONE
        if isinstance(node, Comprehension):
            return self.comprehension(node, scope)
        raise ValueError(f"unknown expression node {type(node).__name__}")

    def call(self, node: Call, scope: Mapping[str, Refs]) -> Refs:
        name, args = node.function, node.args
        target = self.value(node.target, scope) if node.target is not None else None
        if name == "_?._" and target is None and len(args) == 2 and isinstance(args[1], Const) \
                and isinstance(args[1].value, str):
            return self.select(self.value(args[0], scope), args[1].value, False)
        if name == "_?_:_" and target is None and len(args) == 3:
            self.whole(self.value(args[0], scope))
            return self.value(args[1], scope) | self.value(args[2], scope)
        if name in _PASS_ON or (name == "value" and not args) or (name == "optional.of" and target is None):
            out = target or _NONE
            for arg in args:
                out |= self.value(arg, scope)
            return _bounded(set(out))
        if name == "hasValue" and target is not None and not args:
            self.whole(frozenset(r for r in target if r.spread))
            return _NONE  # presence of a place: kept (each select keeps its key when present)
        if name == "size" and (target is None) == (len(args) == 1) and len(args) <= 1:
            operand = target if target is not None else self.value(args[0], scope)
            self.whole(frozenset(r for r in operand if r.spread))
            self.elements(frozenset(r for r in operand if not r.spread))
            return _NONE
        if name == "_+_" and target is None and len(args) == 2:
            out = set()
            for arg in args:
                for ref in self.value(arg, scope):
                    if ref.spread:
                        out.add(ref)
                    else:  # a list's elements (a string, a number: kept as they are; a map: an error)
                        self.elements(frozenset({ref}))
                        out.add(Ref(ref.root, (*ref.path, EACH), True))
            return _bounded(out)
        self.whole(target or _NONE)
        for arg in args:
            self.whole(self.value(arg, scope))
        return _NONE

    def comprehension(self, node: Comprehension, scope: Mapping[str, Refs]) -> Refs:
        elements = self.elements(self.value(node.iter_range, scope))
        names = [n for n in (node.iter_var, node.iter_var2) if n]
        accumulator = self.value(node.accu_init, scope)
        inner = dict(scope)
        inner.update({name: elements for name in names})
        for _ in range(MAX_FIXPOINT):
            inner[node.accu_var] = accumulator
            self.whole(self.value(node.loop_condition, inner))
            grown = accumulator | self.value(node.loop_step, inner)
            if grown == accumulator:
                break
            accumulator = _bounded(set(grown))
        else:
            accumulator = self.whole(accumulator)  # did not settle: read whole, nothing left to follow
            inner[node.accu_var] = accumulator
            self.value(node.loop_step, inner)  # its own reads, once more with the accumulator settled
        # the result: the iteration variables out of scope as the spec has it, or still in as a runtime
        # might keep them: either way it may see the outer binding or the elements
        after = dict(scope)
        for name in names:
            after[name] = (scope[name] if name in scope else self._root(name)) | elements
        after[node.accu_var] = accumulator
        return self.value(node.result, after)

    def _root(self, name: str) -> Refs:
        if name in self.roots:
            self.need(Ref(name, ()))
            return frozenset({Ref(name, ())})
        return _NONE


def _bounded(refs: set[Ref] | Refs) -> Refs:
    if len(refs) > MAX_REFS:
        raise ValueError("too many places to follow")
    return frozenset(refs)


def root_reads(tree: Node, roots: frozenset[str]) -> dict[str, Need]:
    """What `tree` can read of each root it reads (a root it never reads is absent)."""
    analysis = _Analysis(roots)
    analysis.whole(analysis.value(tree, {}))
    return analysis.needs


def trim_plans(trees: Sequence[Node], roots: frozenset[str]) -> dict[str, TrimPlan]:
    """Per root that some of `trees` read only in part, the plan to trim it with so that every one of
    them sees all it can read (webhook.cel.trim.trim); a root read whole by any of them, or by none, is
    absent: an empty result means trim nothing. ValueError when a tree is not understood."""
    needs: dict[str, Need] = {}
    for tree in trees:
        for root, need in root_reads(tree, roots).items():
            needs.setdefault(root, Need()).merge(need)
    plans = {}
    for root, need in needs.items():
        plan = need.plan()
        if plan is not None:
            plans[root] = plan
    return plans
