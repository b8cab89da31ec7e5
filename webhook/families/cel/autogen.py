"""Autogen for pod controllers, as Kyverno generates it (pkg/cel/autogen, vpol/mpol autogen).

A policy whose matchConstraints is exactly one rule for core/v1 `pods` (no objectSelector, no
excludeResourceRules, no resourceNames) also applies to the pods that controllers template:
Deployments, StatefulSets, DaemonSets, ReplicaSets and Jobs (`spec.template`), and CronJobs
(`spec.jobTemplate.spec.template`). Each group gets a copy of the policy with new match constraints
(the first rule's operations, the namespaceSelector kept) and its expressions rewritten:

- ValidatingPolicy / GeneratingPolicy-like specs: every `object.spec`/`object.metadata` (and
  `oldObject.`) in any string of the spec points into the template; `object.metadata.namespace`
  stays (the template has none).
- MutatingPolicy: only matchConditions and ApplyConfiguration expressions are rewritten (regular
  expressions on `object|oldObject|Object` `.spec` / `.metadata.labels` / `.metadata.annotations`),
  and an `Object{...}` construction is wrapped into the template's path.
"""

from __future__ import annotations

import copy
import re
from typing import Any, Callable, Mapping

from webhook.model.quickinit import frozen_dataclass

CONTROLLERS = {  # spec.autogen.podControllers.controllers name -> (group, version, resource, kind, template)
    "daemonsets": ("apps", "v1", "daemonsets", "DaemonSet", "defaults"),
    "deployments": ("apps", "v1", "deployments", "Deployment", "defaults"),
    "replicasets": ("apps", "v1", "replicasets", "ReplicaSet", "defaults"),
    "statefulsets": ("apps", "v1", "statefulsets", "StatefulSet", "defaults"),
    "jobs": ("batch", "v1", "jobs", "Job", "defaults"),
    "cronjobs": ("batch", "v1", "cronjobs", "CronJob", "cronjobs"),
}
TEMPLATE_PATHS = {"defaults": "spec.template", "cronjobs": "spec.jobTemplate.spec.template"}


@frozen_dataclass
class AutogenVariant:
    """One generated copy of a policy spec: for `config` ("defaults" or "cronjobs")."""

    config: str
    kinds: tuple[str, ...]
    spec: Mapping[str, Any]
    targets: tuple[Mapping[str, str], ...] = ()  # {group, version, resource, kind} of each controller it covers


def can_autogen(match: Any) -> bool:
    if not isinstance(match, Mapping):
        return False
    selector = match.get("objectSelector") or {}
    if selector.get("matchLabels") or selector.get("matchExpressions") or match.get("excludeResourceRules"):
        return False
    rules = match.get("resourceRules") or []
    if len(rules) != 1:
        return False
    rule = rules[0] or {}
    return (not rule.get("resourceNames") and rule.get("apiGroups") == [""] and rule.get("apiVersions") == ["v1"]
            and rule.get("resources") == ["pods"])


def _match_constraints(targets: list[tuple], operations: Any, namespace_selector: Any) -> dict[str, Any]:
    by_gv: dict[tuple[str, str], set[str]] = {}
    for group, version, resource, _, _ in targets:
        by_gv.setdefault((group, version), set()).add(resource)
    rules = [{"apiGroups": [g], "apiVersions": [v], "resources": sorted(r), "operations": list(operations or [])}
             for (g, v), r in sorted(by_gv.items())]
    out: dict[str, Any] = {"resourceRules": rules}
    if namespace_selector is not None:
        out["namespaceSelector"] = copy.deepcopy(namespace_selector)
    return out


def _groups(spec: Mapping[str, Any]) -> dict[str, list[tuple]]:
    controllers = ((spec.get("autogen") or {}).get("podControllers") or {}).get("controllers")
    names = CONTROLLERS.keys() if controllers is None else controllers
    groups: dict[str, list[tuple]] = {}
    for name in names:
        target = CONTROLLERS.get(name)
        if target is not None:
            groups.setdefault(target[4], []).append(target)
    return groups


def variants(spec: Mapping[str, Any], rewrite: Callable[[dict[str, Any], str], None]) -> list[AutogenVariant]:
    match = spec.get("matchConstraints")
    if not can_autogen(match):
        return []
    out = []
    for config, targets in sorted(_groups(spec).items()):
        copy_ = copy.deepcopy(dict(spec))
        copy_["matchConstraints"] = _match_constraints(targets, match["resourceRules"][0].get("operations"),
                                                       match.get("namespaceSelector"))
        rewrite(copy_, config)
        out.append(AutogenVariant(config, tuple(sorted(t[3] for t in targets)), copy_,
                                  tuple({"group": g, "version": v, "resource": r, "kind": k} for g, v, r, k, _ in targets)))
    return out


# --- ValidatingPolicy: text replacement over every string of the spec --------------------------------
def _replace_text(text: str, old: str, new: str) -> str:
    out, start = [], 0
    while (index := text.find(old, start)) >= 0:
        rest = text[index + len(old):]
        protected = rest.startswith(".namespace") and not (len(rest) > 10 and (rest[10].isalnum() or rest[10] == "_"))
        out.append(text[start:index] + (old if protected else new))
        start = index + len(old)
    out.append(text[start:])
    return "".join(out)


def _rewrite_strings(value: Any, fn: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {k: _rewrite_strings(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_rewrite_strings(v, fn) for v in value]
    return value


def rewrite_validating(spec: dict[str, Any], config: str) -> None:
    template = TEMPLATE_PATHS[config]

    def fn(text: str) -> str:
        for root in ("object", "oldObject"):
            text = _replace_text(text, f"{root}.spec", f"{root}.{template}.spec")
            text = _replace_text(text, f"{root}.metadata", f"{root}.{template}.metadata")
        return text

    for key in list(spec):
        if key != "matchConstraints":
            spec[key] = _rewrite_strings(spec[key], fn)


# --- MutatingPolicy -------------------------------------------------------------------------------
_SPEC = re.compile(r"\b(object|oldObject|Object)\.spec")
_LABELS = re.compile(r"\b(object|oldObject|Object)\.metadata\.labels")
_ANNOTATIONS = re.compile(r"\b(object|oldObject|Object)\.metadata\.annotations")
_WRAPPERS = {
    "defaults": ("Object{spec: Object.spec{template: Object.spec.template{", "}}}"),
    "cronjobs": ("Object{spec: Object.spec{jobTemplate: Object.spec.jobTemplate{spec: Object.spec.jobTemplate.spec{"
                 "template: Object.spec.jobTemplate.spec.template{", "}}}}}"),
}


def _mutating_expression(expression: str, config: str) -> str:
    template = TEMPLATE_PATHS[config]
    expression = _SPEC.sub(lambda m: f"{m.group(1)}.{template}.spec", expression)
    expression = _LABELS.sub(lambda m: f"{m.group(1)}.{template}.metadata.labels", expression)
    expression = _ANNOTATIONS.sub(lambda m: f"{m.group(1)}.{template}.metadata.annotations", expression)
    stripped = expression.strip()
    if not stripped.startswith("Object"):
        return expression
    content = stripped[len("Object"):].lstrip(" \t\r\n")
    if not content.startswith("{"):
        return expression
    content, depth = content[1:], 1
    for index, char in enumerate(content):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth == 0:
            if index == 0:
                return expression
            opening, closing = _WRAPPERS[config]
            return opening + content[:index] + closing + content[index + 1:]
    return expression


def rewrite_mutating(spec: dict[str, Any], config: str) -> None:
    for condition in spec.get("matchConditions") or []:
        if isinstance(condition, dict) and isinstance(condition.get("expression"), str):
            condition["expression"] = _mutating_expression(condition["expression"], config)
    for mutation in spec.get("mutations") or []:
        apply = mutation.get("applyConfiguration") if isinstance(mutation, dict) else None
        if isinstance(apply, dict) and isinstance(apply.get("expression"), str):
            apply["expression"] = _mutating_expression(apply["expression"], config)
