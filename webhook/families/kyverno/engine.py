"""Evaluate one compiled Kyverno policy's rules against one request: mutate, validate and generate, in order.

Each rule is matched on its own (``autogen-`` rules included), runs its CEL preconditions, context and
preconditions (guard.py) and then its typed handler, and reports a ``RuleResult`` under its own name, as
Kyverno does. ``applyRules: One`` stops after the first rule that applied.
"""

from __future__ import annotations

from dataclasses import field, replace
from typing import Any, Callable

from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Outcome, RuleResult

from .context import RequestData, base_document
from .guard import load_and_check, prepare
from .match import RequestInfo
from .rule_env import RuleEnv
from .rule_types import GenerateRule, Generated, MutateRule, ValidateRule
from .variables import JsonContext

_INFO = object()   # RuleEnv.memo key: (RequestData, namespace object, RequestInfo)


@frozen_dataclass
class RulesMutation:
    resource: dict
    results: tuple[RuleResult, ...] = field(default_factory=tuple)


def request_info(request: RequestData, env: RuleEnv) -> RequestInfo:
    """What matching reads, once per request: matches() and validate() of every policy ask for it."""
    last = env.memo.get(_INFO)
    # keyed by what _request_info reads: the policies of one admission share the request data and namespace
    if last is not None and last[0] is request and last[1] is env.namespace_object:
        return last[2]  # type: ignore[no-any-return]
    info = _request_info(request, env)
    env.memo[_INFO] = (request, env.namespace_object, info)
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


def validate_rules(rules: tuple[ValidateRule, ...], request: RequestData, env: RuleEnv,
                   apply_one: bool = False) -> list[RuleResult]:
    info = request_info(request, env)
    delete = request.operation == "DELETE"
    shared = JsonContext(base_document(request, memo=env.memo), delete=delete)
    resource = None if delete else request.resource
    results: list[RuleResult] = []
    for rule in rules:
        if not rule.head.selector.applies(info):
            continue
        rule_env = env.for_rule(rule.head.name)
        base = shared if rule_env is env else JsonContext(base_document(request, rule_env.overrides), delete)
        result = _validate_one(rule, base, rule_env, request, resource)
        if result is None:
            continue
        results.append(result)
        if apply_one and result.outcome is not Outcome.SKIP:
            break
    return results


def _validate_one(rule: ValidateRule, base: JsonContext, env: RuleEnv, request: RequestData,
                  resource: Any) -> RuleResult | None:
    prepared = prepare(rule.head, base, env)
    if prepared.early is not None:
        return prepared.early
    result = rule.handler.check(rule.head.ref, prepared.ctx, env, resource)
    if result is not None and result.outcome is Outcome.FAIL and _existing_violation(rule, env, request):
        return rule.head.ref.result(Outcome.SKIP, "skipping the rule evaluation as pre-existing violations are "
                                                  "allowed")
    return result


def _existing_violation(rule: ValidateRule, env: RuleEnv, request: RequestData) -> bool:
    """Kyverno's allowExistingViolations (default true): an Enforce rule does not block an UPDATE of an object
    that already violated it."""
    if (not rule.spares_existing or request.operation != "UPDATE" or request.old_object is None
            or request.old_object == request.object):
        return False
    old = replace(request, object=request.old_object)
    head = rule.head
    prepared = load_and_check(head.ref, head.context, head.preconditions,
                              JsonContext(base_document(old, env.overrides)), env)
    prior = prepared.early or rule.handler.check(head.ref, prepared.ctx, env, request.old_object)
    return prior is not None and prior.outcome is Outcome.FAIL


def mutate_rules(rules: tuple[MutateRule, ...], request: RequestData, env: RuleEnv,
                 apply_one: bool = False, lifted: Callable[[str], bool] | None = None) -> RulesMutation:
    """`lifted(rule)`: a PolicyException lifts the rule off this request: it patches nothing (a skip, which the
    policy names the exception in), as Kyverno checks exceptions before it mutates."""
    # a shallow copy: nothing below edits what it is given (merge copies on write, JSON patches copy)
    resource = dict(request.resource)
    results: list[RuleResult] = []
    current = replace(request, object=resource)
    for rule in rules:
        if current.object is not resource:
            current = replace(request, object=resource)
        head = rule.head
        if not head.selector.applies(request_info(current, env)):
            continue
        if lifted is not None and lifted(head.name):
            results.append(head.ref.result(Outcome.SKIP, "rule is skipped due to policy exception"))
            continue
        rule_env = env.for_rule(head.name)
        ctx = JsonContext(base_document(current, rule_env.overrides, env.memo), delete=request.operation == "DELETE")
        prepared = prepare(head, ctx, rule_env)
        result = prepared.early
        if result is None:
            done = rule.handler.mutate(head.ref, prepared.ctx, rule_env, resource)
            if done.failure is not None:
                result = done.failure
            elif done.resource == resource:
                result = head.ref.result(Outcome.SKIP, "no patches applied")
            else:
                result, resource = head.ref.result(Outcome.PASS, "resource patched"), done.resource
        results.append(result)
        if apply_one and result.outcome is not Outcome.SKIP:
            break
    return RulesMutation(resource, tuple(results))


def generate_rules(rules: tuple[GenerateRule, ...], request: RequestData, env: RuleEnv) -> list[Generated]:
    info = request_info(request, env)
    delete = request.operation == "DELETE"
    made: list[Generated] = []
    for rule in rules:
        head = rule.head
        if not head.selector.applies(info):
            continue
        rule_env = env.for_rule(head.name)
        prepared = prepare(head, JsonContext(base_document(request, rule_env.overrides, env.memo), delete), rule_env)
        if prepared.early is not None:
            made.append(Generated(prepared.early))
            continue
        made.append(rule.handler.generate(head.ref, prepared.ctx, rule_env))
    return made
