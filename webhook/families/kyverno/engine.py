"""Evaluate one compiled Kyverno policy against one request: mutate, validate and generate rules in order.

Each rule is matched on its own (``autogen-`` rules included), loads its context, checks its preconditions and
yields a ``RuleOutcome`` named after the rule, as Kyverno reports it. ``applyRules: One`` stops after the first
rule that applied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .conditions import ConditionError, evaluate_conditions
from .context import ContextError, RequestData, base_document, load_entries
from .foreach import apply_mutation, mutate_foreach
from .generate import generate_objects
from .match import RequestInfo, rule_applies
from .outcome import ERROR, FAIL, PASS, SKIP, Outcome, RuleEnv
from .patches6902 import PatchError
from .variables import Context, SubstitutionError, substitute_patches
from .validate import run_validator

from webhook.model.quickinit import frozen_dataclass


@frozen_dataclass
class CompiledRule:
    name: str
    raw: Mapping[str, Any]
    kind: str                         # "validate" | "mutate" | "generate"
    action: str                       # "Enforce" | "Audit" (validate rules)
    cel: Any = None                   # CompiledCel for validate.cel rules
    pss: Any = None                   # compiled podSecurity check
    cel_preconditions: tuple = ()     # compiled celPreconditions (name, program)


@frozen_dataclass
class RuleOutcome:
    rule: str
    kind: str
    status: str
    message: str
    action: str = "Audit"
    generated: tuple[Mapping[str, Any], ...] = ()


@dataclass
class MutationResult:
    resource: dict
    outcomes: list[RuleOutcome] = field(default_factory=list)


_INFO: tuple[Any, Any, Any] = (None, None, None)  # matches() and validate() of a policy ask for the same info


def request_info(request: RequestData, env: RuleEnv) -> RequestInfo:
    global _INFO
    last = _INFO  # one read: the triple is replaced whole, never updated in place
    # keyed by what _request_info reads: the policies of one admission share the request data and namespace
    if last[0] is request and last[1] is env.namespace_object:
        return last[2]
    info = _request_info(request, env)
    _INFO = (request, env.namespace_object, info)
    return info


def _request_info(request: RequestData, env: RuleEnv) -> RequestInfo:
    resource = request.resource
    meta = resource.get("metadata") or {}
    api_version = str(resource.get("apiVersion") or "")
    group, _, version = api_version.rpartition("/")
    kind = request.kind or {}
    subject = request.subject
    namespace_labels = ((env.namespace_object or {}).get("metadata") or {}).get("labels")
    return RequestInfo(
        group=kind.get("group", group), version=kind.get("version", version),
        kind=kind.get("kind", str(resource.get("kind") or "")), operation=request.operation,
        name=request.name or str(meta.get("name") or ""), namespace=request.namespace or str(meta.get("namespace") or ""),
        labels=meta.get("labels") or {}, annotations=meta.get("annotations") or {},
        subresource=request.subresource,
        namespace_labels=namespace_labels if env.namespace_object is not None else None,
        username=subject.username, groups=subject.groups, roles=subject.roles, cluster_roles=subject.cluster_roles)


def _cel_preconditions(rule: CompiledRule, ctx: Context, env: RuleEnv) -> Outcome | None:
    if not rule.cel_preconditions:
        return None
    from .cel_rule import activation_of, preconditions_hold
    try:
        if not preconditions_hold(rule.cel_preconditions, activation_of(ctx.data, env)):
            return Outcome(SKIP, "cel preconditions not met")
    except Exception as exc:  # CelError: the message names the expression
        return Outcome(ERROR, f"failed to evaluate cel preconditions: {exc}")
    return None


def _prepare(rule: CompiledRule, ctx: Context, env: RuleEnv) -> tuple[Context, Outcome | None]:
    """Rule-level CEL preconditions, context and preconditions, shared by every rule type."""
    early = _cel_preconditions(rule, ctx, env)
    if early is not None:
        return ctx, early
    try:
        ctx = load_entries(rule.raw.get("context"), ctx, env.lookups, env.overrides)
    except ContextError as exc:
        return ctx, Outcome(ERROR, f"failed to load context: {exc}")
    try:
        pre = evaluate_conditions(rule.raw.get("preconditions"), ctx)
    except ConditionError as exc:
        return ctx, Outcome(ERROR, f"failed to evaluate preconditions: {exc}")
    if not pre.passed:
        return ctx, Outcome(SKIP, "; ".join(m for m in ("preconditions not met", pre.message) if m))
    return ctx, None


def validate_rules(rules: tuple[CompiledRule, ...], request: RequestData, env: RuleEnv,
                   apply_one: bool = False) -> list[RuleOutcome]:
    info = request_info(request, env)
    shared = Context(base_document(request), delete=request.operation == "DELETE")
    results: list[RuleOutcome] = []
    for rule in rules:
        if rule.kind != "validate" or not rule_applies(rule.raw, info):
            continue
        rule_env = env.for_rule(rule.name)
        base = shared if rule_env is env else Context(base_document(request, rule_env.overrides), shared.delete)
        outcome = _validate_one(rule, base, rule_env, request)
        if outcome is None:
            continue
        results.append(RuleOutcome(rule.name, "validate", outcome.status, outcome.message, rule.action))
        if apply_one and outcome.status != SKIP:
            break
    return results


def _validate_one(rule: CompiledRule, base: Context, env: RuleEnv, request: RequestData) -> Outcome | None:
    spec = rule.raw.get("validate") or {}
    if rule.cel is not None or rule.pss is not None:
        ctx, early = _prepare(rule, base, env)
        if early is not None:
            return early
        if rule.cel is not None:
            from .cel_rule import evaluate_cel
            return evaluate_cel(rule.name, rule.cel, ctx.data, env)
        return rule.pss.check(request.resource if request.operation != "DELETE" else None, rule.name)
    early = _cel_preconditions(rule, base, env)
    if early is not None:
        return early
    merged = {**spec, "context": rule.raw.get("context"), "preconditions": rule.raw.get("preconditions")}
    resource = None if request.operation == "DELETE" else request.resource
    outcome = run_validator(rule.name, merged, base, env, resource)
    if outcome is not None and outcome.status == FAIL and _existing_violation(rule, spec, merged, env, request):
        return Outcome(SKIP, "skipping the rule evaluation as pre-existing violations are allowed")
    return outcome


def _existing_violation(rule: CompiledRule, spec: Mapping[str, Any], merged: Mapping[str, Any], env: RuleEnv,
                        request: RequestData) -> bool:
    """Kyverno's allowExistingViolations (default true): an Enforce rule does not block an UPDATE of an object
    that already violated it."""
    if (rule.action != "Enforce" or request.operation != "UPDATE" or request.old_object is None
            or spec.get("allowExistingViolations") is False or request.old_object == request.object):
        return False
    old = RequestData(**{**request.__dict__, "object": request.old_object})
    ctx = Context(base_document(old, env.overrides))
    prior = run_validator(rule.name, merged, ctx, env, request.old_object)
    return prior is not None and prior.status == FAIL


def mutate_rules(rules: tuple[CompiledRule, ...], request: RequestData, env: RuleEnv,
                 apply_one: bool = False) -> MutationResult:
    # a shallow copy: nothing below edits what it is given (merge copies on write, JSON patches copy)
    resource = dict(request.resource)
    result = MutationResult(resource)
    for rule in rules:
        if rule.kind != "mutate":
            continue
        current = RequestData(**{**request.__dict__, "object": result.resource})
        if not rule_applies(rule.raw, request_info(current, env)):
            continue
        rule_env = env.for_rule(rule.name)
        ctx = Context(base_document(current, rule_env.overrides), delete=request.operation == "DELETE")
        ctx, early = _prepare(rule, ctx, rule_env)
        outcome, patched = early, result.resource
        if early is None:
            outcome, patched = _mutate_one(rule, ctx, rule_env, result.resource)
        result.resource = patched
        result.outcomes.append(RuleOutcome(rule.name, "mutate", outcome.status, outcome.message))
        if apply_one and outcome.status != SKIP:
            break
    return result


def _mutate_one(rule: CompiledRule, ctx: Context, env: RuleEnv, resource: dict) -> tuple[Outcome, dict]:
    spec = rule.raw.get("mutate") or {}
    if spec.get("foreach"):
        patched, failure = mutate_foreach(spec["foreach"], ctx, env, resource)
        if failure is not None:
            return failure, resource
    else:
        try:
            patches = substitute_patches(spec, ctx)
            patched = apply_mutation(resource, patches)
        except (SubstitutionError, PatchError) as exc:
            return Outcome(ERROR, f"failed to patch resource: {exc}"), resource
    if patched == resource:
        return Outcome(SKIP, "no patches applied"), resource
    return Outcome(PASS, "resource patched"), patched


def generate_rules(rules: tuple[CompiledRule, ...], request: RequestData, env: RuleEnv) -> list[RuleOutcome]:
    info = request_info(request, env)
    base = Context(base_document(request), delete=request.operation == "DELETE")
    results: list[RuleOutcome] = []
    for rule in rules:
        if rule.kind != "generate" or not rule_applies(rule.raw, info):
            continue
        rule_env = env.for_rule(rule.name)
        ctx, early = _prepare(rule, Context(base_document(request, rule_env.overrides), base.delete), rule_env)
        if early is not None:
            results.append(RuleOutcome(rule.name, "generate", early.status, early.message))
            continue
        outcome, objects = generate_objects(rule.raw.get("generate") or {}, ctx, rule_env, request)
        results.append(RuleOutcome(rule.name, "generate", outcome.status, outcome.message, generated=objects))
    return results
