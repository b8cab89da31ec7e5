"""What a program can read of a value, as a trie, and a copy of the value keeping only that.

A `Need` is the part of a value a program can observe: `whole` (anything, e.g. it is compared or passed
to a function), some `fields` (map keys selected by name, each with what is read of its value; a key
that is only tested for presence has an empty child) and `each` (the elements of a list, or a map's
keys, are iterated or counted, with what is read of each element).

`compile_trim(need.plan())` builds, once, a function that copies a value keeping what the need names and
sharing everything it keeps whole (no deep copy). Its rules keep every observation the need allows
unchanged, whatever the value's shape:
- a kept value keeps its type; a dict keeps every named key that is present (presence, errors on absent
  keys and `has()` stay the same), a list keeps its length and order (`size()`, iteration, the
  runtime's iteration budget stay the same);
- a map whose keys are iterated is kept whole (iterating a map binds its keys; `m[k]` reads would be
  `whole` anyway, but a whole map is the simple truth);
- anything else (scalars, a list not iterated, other Mapping or sequence types) is kept as it is.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from webhook.model.quickinit import frozen_dataclass

_MISSING: Any = object()


class Need:
    """A mutable trie node while a program is analysed (webhook.cel.reads); `plan()` freezes it."""

    __slots__ = ("whole", "fields", "each")

    def __init__(self) -> None:
        self.whole = False
        self.fields: dict[str, Need] = {}
        self.each: Need | None = None

    def field(self, name: str) -> "Need":
        found = self.fields.get(name)
        if found is None:
            found = self.fields[name] = Need()
        return found

    def element(self) -> "Need":
        if self.each is None:
            self.each = Need()
        return self.each

    def merge(self, other: "Need") -> None:
        self.whole = self.whole or other.whole
        for name, child in other.fields.items():
            self.field(name).merge(child)
        if other.each is not None:
            self.element().merge(other.each)

    def plan(self) -> "TrimPlan | None":
        """The frozen form; None when the value is read whole (so nothing is trimmed)."""
        if self.whole:
            return None
        each = self.each.plan() if self.each is not None else _NO_EACH
        return TrimPlan(tuple((name, child.plan()) for name, child in sorted(self.fields.items())), each)

    def __repr__(self) -> str:
        return describe(self.plan())


@frozen_dataclass
class TrimPlan:
    """A frozen Need that is not `whole`; a child plan of None means that child is kept whole."""

    fields: tuple[tuple[str, "TrimPlan | None"], ...]
    each: "TrimPlan | None | _NoEach"


class _NoEach:
    """The `each` of a plan whose elements are not read: distinct from None (elements read whole)."""

    def __repr__(self) -> str:
        return "-"


_NO_EACH = _NoEach()


Trim = Callable[[Any], Any]


def compile_trim(plan: TrimPlan | None) -> Trim | None:
    """The function that trims a value to `plan`; None when the plan keeps the value whole. Built once per
    plan: per request it walks only the plan's keys (or the value's, when it has fewer) with no lookups of
    the plan itself (a notebook pod for the pod-security policies: ~5 us)."""
    if plan is None:
        return None
    if plan.each is not _NO_EACH:
        each = compile_trim(plan.each)  # type: ignore[arg-type]
        if each is None:
            return None  # a list of whole elements is the list; a map iterated is kept whole anyway

        def elements(value: Any) -> Any:
            # a dict: its keys are iterated or counted, kept whole (module docstring)
            return [each(element) for element in value] if type(value) is list else value
        return elements
    fields = {name: compile_trim(child) for name, child in plan.fields}
    items = tuple(fields.items())
    count = len(items)

    def keys(value: Any) -> Any:
        if type(value) is not dict:
            return value
        out = {}
        if len(value) <= count:
            for name, found in value.items():
                child = fields.get(name, _MISSING)
                if child is not _MISSING:
                    out[name] = found if child is None else child(found)
        else:
            for name, child in items:
                found = value.get(name, _MISSING)
                if found is not _MISSING:
                    out[name] = found if child is None else child(found)
        return out
    return keys


def trim(value: Any, plan: TrimPlan | None) -> Any:
    """`value` keeping what `plan` reads (None: all of it); shares whatever it keeps whole."""
    trimmer = compile_trim(plan)
    return value if trimmer is None else trimmer(value)


def describe(plan: TrimPlan | None) -> str:
    """A compact text of a plan for tests and logs: `*` whole, `{a: ..., b: ...}` fields, `[...]` each."""
    if plan is None:
        return "*"
    parts = [f"{name}: {describe(child)}" if child is None or child.fields or child.each is not _NO_EACH
             else name for name, child in plan.fields]
    text = "{" + ", ".join(parts) + "}"
    if plan.each is not _NO_EACH:
        text += f"[{describe(plan.each)}]"  # type: ignore[arg-type]
    return text


def trimmed(values: Mapping[str, Any], trims: Mapping[str, Trim]) -> dict[str, Any]:
    """A copy of an activation's values with each variable named in `trims` trimmed by its function."""
    out = dict(values)
    for name, trimmer in trims.items():
        if name in out:
            out[name] = trimmer(out[name])
    return out
