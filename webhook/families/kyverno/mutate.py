"""The handlers of a Kyverno mutate rule (pkg/engine/handlers/mutation/mutate_resource.go): strategic-merge and
JSON 6902 patches, and ``foreach`` lists of them, each element with its own context and preconditions."""

from __future__ import annotations

from typing import Any, Mapping

from webhook.model.jsoncopy import clone
from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Outcome

from .conditions import ConditionError, evaluate_conditions
from .context_entries import ContextEntry, ContextError, load_entries
from .foreach import element_context, evaluate_list, past_deadline
from .jp_errors import JMESPathError
from .mutate_strategic import apply_strategic_merge
from .patches6902 import Json6902Error, apply_patches, parse_patches
from .references import check
from .rule_env import RuleEnv
from .rule_types import Mutated, RuleRef
from .variables import JsonContext, SubstitutionError, has_variables, substitute_all


@frozen_dataclass
class _Patch:
    value: Any        # as written, $(...) references resolved at load (a BrokenReference where they failed)
    static: bool      # no {{ }} variable: used as it is, without a substituting walk per request

    def render(self, ctx: JsonContext) -> Any:
        value = check(self.value)   # a reference that did not resolve at load fails here, as in Kyverno
        return value if self.static else substitute_all(value, ctx)


def patch_of(value: Any) -> _Patch:
    return _Patch(value, not has_variables(value))


@frozen_dataclass
class Patches:
    """patchStrategicMerge, then patchesJson6902 (either may be absent)."""

    strategic: _Patch = patch_of(None)
    json6902: _Patch = patch_of(None)

    @classmethod
    def of(cls, spec: Mapping[str, Any]) -> "Patches":
        return cls(patch_of(spec.get("patchStrategicMerge")), patch_of(spec.get("patchesJson6902")))

    def apply(self, resource: dict, ctx: JsonContext) -> dict:
        """Raises SubstitutionError or Json6902Error. Both are substituted before either applies."""
        strategic, operations = self.strategic.render(ctx), self.json6902.render(ctx)
        return apply_mutation(resource, strategic, operations)


def apply_mutation(resource: dict, strategic: Any = None, operations: Any = None) -> dict:
    """A patched copy of `resource`. Each kind of patch returns a copy of what it is given: copying first as
    well would walk the whole object once more per rule."""
    patched = resource
    if strategic is not None:
        patched = apply_strategic_merge(patched, strategic)
    if operations:
        patched = apply_patches(patched, parse_patches(operations))
    return clone(resource) if patched is resource else patched


@frozen_dataclass
class PatchMutation:
    patches: Patches

    def mutate(self, ref: RuleRef, ctx: JsonContext, env: RuleEnv, resource: dict) -> Mutated:
        try:
            return Mutated(self.patches.apply(resource, ctx))
        except (SubstitutionError, Json6902Error) as exc:
            return Mutated(resource, ref.result(Outcome.ERROR, f"failed to patch resource: {exc}"))


@frozen_dataclass
class MutateEntry:
    list: str
    patches: Patches
    context: tuple[ContextEntry, ...] = ()
    preconditions: Any = None
    descending: bool = False
    nested: "ForeachMutation | None" = None   # a foreach inside the entry, instead of its patches


@frozen_dataclass
class ForeachMutation:
    """mutate.foreach: each entry's patches per element, in order; ``nesting`` is this list's depth."""

    entries: tuple[MutateEntry, ...]
    nesting: int = 0

    def mutate(self, ref: RuleRef, ctx: JsonContext, env: RuleEnv, resource: dict) -> Mutated:
        """On failure the result carries the error and the resource is not to be used."""
        for entry in self.entries:
            try:
                elements = evaluate_list(entry.list, ctx.with_values(
                    request={**ctx.data.get("request", {}), "object": resource}))
            except JMESPathError as exc:
                if "Unknown key" in str(exc):
                    continue
                return Mutated(resource, ref.result(Outcome.ERROR, f"failed to evaluate list {entry.list}: {exc}"))
            order = range(len(elements) - 1, -1, -1) if entry.descending else range(len(elements))
            for index in order:
                late = past_deadline(ref, env, index, len(elements))
                if late is not None:
                    return Mutated(resource, late)
                done = self._element(ref, entry, ctx, env.for_element(index), resource, elements[index], index)
                if done.failure is not None:
                    return done
                resource = done.resource
        return Mutated(resource)

    def _element(self, ref: RuleRef, entry: MutateEntry, ctx: JsonContext, env: RuleEnv, resource: dict,
                 element: Any, index: int) -> Mutated:
        local = element_context(ctx, element, index, self.nesting)
        local = local.with_values(request={**local.data.get("request", {}), "object": resource})
        try:
            local = load_entries(entry.context, local, env.lookups, env.overrides)
            if not evaluate_conditions(entry.preconditions, local).passed:
                return Mutated(resource)
        except (ContextError, ConditionError) as exc:
            return Mutated(resource, ref.result(Outcome.ERROR, f"foreach element {index}: {exc}"))
        if entry.nested is not None:
            return entry.nested.mutate(ref, local, env, resource)
        try:
            return Mutated(entry.patches.apply(resource, local))
        except (SubstitutionError, Json6902Error) as exc:
            return Mutated(resource, ref.result(Outcome.ERROR, f"foreach element {index}: {exc}"))
