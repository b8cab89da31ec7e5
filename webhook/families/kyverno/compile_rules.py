"""Each rule of a policy compiled into its typed handler, chosen here once (as Kyverno's engine chooses its
pkg/engine/handlers): nothing on the request path looks at a rule's keys to decide what it is."""

from __future__ import annotations

from typing import Any, Mapping

from webhook.model.results import Action, PolicyId

from .cel_rule import compile_cel, compile_preconditions
from .context_entries import compile_entries
from .foreach import ForeachEntry, ForeachValidation
from .generate import CloneGeneration, DataGeneration, spec_of
from .guard import GuardedCheck
from .match import RuleSelector
from .mutate import ForeachMutation, MutateEntry, PatchMutation, Patches
from .podsecurity import compile_pod_security
from .references import resolve_rule
from .rule_types import (GenerateRule, GenerationHandler, MutateRule, MutationHandler, RuleHead, RuleRef,
                         ValidateRule, ValidationHandler)
from .validate import AnyPatternCheck, DenyCheck, PatternCheck, pattern_document
from .variables import has_variables

RULE_TYPES = ("validate", "mutate", "generate", "verifyImages")

TypedRule = ValidateRule | MutateRule | GenerateRule


class RuleCompileError(ValueError):
    """A rule that cannot be compiled; the message names the field (compile.PolicyError adds the policy)."""


def _list(value: Any) -> tuple[Mapping[str, Any], ...]:
    return tuple(value) if isinstance(value, list) else ()


def compile_rule(policy: PolicyId, raw: Mapping[str, Any], action: Action, cel: Any) -> TypedRule:
    """`action`: the rule's own, already normalised (validate.failureAction, else the spec's)."""
    kind = next(t for t in RULE_TYPES if raw.get(t))
    raw = resolve_rule(raw)   # $(...) point into the policy itself: resolved once, here
    spec = raw[kind]
    head = RuleHead(
        ref=RuleRef(policy, str(raw["name"])), selector=RuleSelector.of(raw), context=compile_entries(raw.get("context")),
        preconditions=raw.get("preconditions"), cel_preconditions=_cel_preconditions(raw, cel),
        properties=tuple((str(k), str(v)) for k, v in (raw.get("reportProperties") or {}).items()),
        foreach=isinstance(spec, Mapping) and bool(spec.get("foreach")))
    if kind == "mutate":
        return MutateRule(head, _mutation(spec))
    if kind == "generate":
        return GenerateRule(head, _generation(spec))
    handler, resource_check = _rule_check(spec, cel)
    return ValidateRule(head, handler, action, explicit_action=bool(spec.get("failureAction")),
                        action_overrides=_list(spec.get("failureActionOverrides")),
                        spares_existing=resource_check and action is Action.ENFORCE
                        and spec.get("allowExistingViolations") is not False)


def _cel_preconditions(raw: Mapping[str, Any], cel: Any) -> tuple[tuple[str, Any], ...]:
    if not raw.get("celPreconditions"):
        return ()
    if cel is None:
        raise RuleCompileError("celPreconditions need the CEL engine")
    try:
        return compile_preconditions(raw["celPreconditions"], cel)
    except Exception as exc:  # the CEL engine's error names the expression
        raise RuleCompileError(f"celPreconditions: {exc}") from exc


def _rule_check(spec: Mapping[str, Any], cel: Any) -> tuple[ValidationHandler | None, bool]:
    """The rule's check, and whether it is one that checks the resource itself (pattern, anyPattern, deny,
    foreach: those spare existing violations). validate.cel first, then podSecurity, as before."""
    cel_check = pss = None
    if spec.get("cel") is not None:
        if cel is None:
            raise RuleCompileError("validate.cel needs the CEL engine")
        try:
            cel_check = compile_cel(spec["cel"], cel, str(spec.get("message") or ""))
        except Exception as exc:  # the CEL engine's error names the expression
            raise RuleCompileError(f"validate.cel: {exc}") from exc
    if spec.get("podSecurity") is not None:
        try:
            pss = compile_pod_security(spec["podSecurity"])
        except ValueError as exc:
            raise RuleCompileError(f"validate.podSecurity: {exc}") from exc
    if cel_check is not None:
        return cel_check, False
    if pss is not None:
        return pss, False
    return validation_check(spec, spec.get("message") or "", 0), True


def validation_check(spec: Mapping[str, Any], message: Any, nesting: int) -> ValidationHandler | None:
    """deny, pattern, anyPattern or foreach (in that order of precedence) of a rule or a foreach entry."""
    if spec.get("deny") is not None:
        return DenyCheck((spec["deny"] or {}).get("conditions"), message)
    pattern, alternatives = spec.get("pattern"), spec.get("anyPattern")
    if pattern is not None:
        fallback = pattern_document(alternatives, has_variables(alternatives)) if alternatives is not None else None
        return PatternCheck(pattern_document(pattern, has_variables(pattern)), message, fallback)
    if alternatives is not None:
        return AnyPatternCheck(pattern_document(alternatives, has_variables(alternatives)), message)
    if spec.get("foreach"):
        return ForeachValidation(tuple(_validate_entry(e, message, nesting) for e in spec["foreach"]), nesting)
    return None


def _validate_entry(entry: Mapping[str, Any], rule_message: Any, nesting: int) -> ForeachEntry:
    # the rule's validate.message, when it has one, is what each failing element reports
    message = rule_message or entry.get("message") or ""
    step = GuardedCheck(compile_entries(entry.get("context")), entry.get("preconditions"),
                        validation_check(entry, message, nesting + 1))
    return ForeachEntry(str(entry.get("list", "")), step, entry.get("elementScope", True))


def _mutation(spec: Mapping[str, Any]) -> MutationHandler:
    if spec.get("foreach"):
        return _foreach_mutation(spec["foreach"], 0)
    return PatchMutation(Patches.of(spec))


def _foreach_mutation(entries: list, nesting: int) -> ForeachMutation:
    return ForeachMutation(tuple(MutateEntry(
        list=str(e.get("list", "")), patches=Patches.of(e), context=compile_entries(e.get("context")),
        preconditions=e.get("preconditions"), descending=e.get("order") == "Descending",
        nested=_foreach_mutation(e["foreach"], nesting + 1) if e.get("foreach") else None)
        for e in entries), nesting)


def _generation(spec: Mapping[str, Any]) -> GenerationHandler:
    if spec.get("clone"):
        return CloneGeneration(spec_of(spec))
    if spec.get("cloneList"):
        return CloneGeneration(spec_of(spec), listed=True)
    return DataGeneration(spec_of(spec))
