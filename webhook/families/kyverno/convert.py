"""``quartermaster convert``: a ClusterPolicy/Policy as ``policies.kyverno.io/v1`` ValidatingPolicy or
MutatingPolicy where the translation is faithful; otherwise the reason it is not. Rules that share kind, match
and actions become one policy under the original name (its suite keeps working, except where one resource
passes one rule and fails another: the new kinds report one result per policy); other rules become
``<policy>-<rule>`` policies.

Faithful means: the rule's ``match`` is kinds (+ operations, namespaces, selector), it has no
context, JMESPath preconditions, foreach or exclusions beyond kinds, and its check is ``validate.cel``, a
``pattern``/``anyPattern`` the pattern translator accepts, or a ``patchStrategicMerge`` without anchors or
variables. Autogen needs nothing: ValidatingPolicy/MutatingPolicy generate their pod-controller variants.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from webhook.model.apiresources import lookup as api_resource

from .anchors import parse_anchor
from .compile import POLICY_KINDS
from .convert_pattern import Untranslatable, translate
from .references import broken, resolve_rule
from .variables import has_variables

API_VERSION = "policies.kyverno.io/v1"


@dataclass
class PolicyConversion:
    documents: list[dict] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)     # "policy/rule: reason"


def convert_document(document: Mapping[str, Any]) -> PolicyConversion:
    result = PolicyConversion()
    if document.get("kind") not in POLICY_KINDS:
        result.refused.append(f"{document.get('kind')} {_name(document)}: not a Kyverno ClusterPolicy/Policy")
        return result
    rules = [r for r in (document.get("spec") or {}).get("rules") or [] if isinstance(r, Mapping)]
    for rule in rules:
        try:
            rule = resolve_rule(rule)   # $(...) point into the policy: translate what Kyverno would evaluate
            if broken(rule):
                raise Untranslatable(f"a $(...) reference does not resolve ({broken(rule)})")
            result.documents.append(_convert_rule(document, rule, single=len(rules) == 1))
        except Untranslatable as exc:
            result.refused.append(f"{_name(document)}/{rule.get('name')}: {exc}")
    if len(result.documents) > 1 and not result.refused:
        result.documents = _combined(document, result.documents)
    return result


def _combined(document: Mapping[str, Any], converted: list[dict]) -> list[dict]:
    """Rules with the same kind, match and actions become one policy under the original name (as Kyverno's own
    CEL library ports them): its validations are the rules' validations, in order. Variables of different
    rules must not collide; otherwise each rule stays its own policy."""
    first = converted[0]
    shape = lambda d: (d["kind"], {k: v for k, v in d["spec"].items()  # noqa: E731 - local key function
                                   if k not in ("validations", "variables", "mutations", "auditAnnotations")})
    names = [v["name"] for d in converted for v in d["spec"].get("variables") or []]
    if any(shape(d) != shape(first) for d in converted) or len(names) != len(set(names)):
        return converted
    spec = copy.deepcopy(first["spec"])
    for key in ("validations", "variables", "mutations", "auditAnnotations"):
        merged = [item for d in converted for item in d["spec"].get(key) or []]
        if merged:
            spec[key] = merged
    return [{**first, "metadata": {**first["metadata"], "name": _name(document)}, "spec": spec}]


def _name(document: Mapping[str, Any]) -> str:
    return str((document.get("metadata") or {}).get("name", ""))


def _convert_rule(document: Mapping[str, Any], rule: Mapping[str, Any], single: bool) -> dict:
    for key, reason in (("context", "context entries (JMESPath, API calls) have no ValidatingPolicy equivalent "
                                    "here"), ("preconditions", "JMESPath preconditions would need translating "
                                                                "to CEL matchConditions")):
        if rule.get(key):
            raise Untranslatable(reason)
    spec = document.get("spec") or {}
    meta = document.get("metadata") or {}
    name = _name(document) if single else f"{_name(document)}-{rule.get('name')}"
    out_meta = {"name": name}
    if document.get("kind") == "Policy" and meta.get("namespace"):
        out_meta["namespace"] = meta["namespace"]
    if meta.get("annotations"):
        out_meta["annotations"] = dict(meta["annotations"])
    body: dict[str, Any] = {"matchConstraints": _match_constraints(rule)}
    conditions = [*_namespace_conditions(rule), *copy.deepcopy(rule.get("celPreconditions") or [])]
    if conditions:
        body["matchConditions"] = conditions
    if rule.get("validate"):
        kind = "ValidatingPolicy" if document.get("kind") == "ClusterPolicy" else "NamespacedValidatingPolicy"
        body.update(_validation(rule, spec))
    elif rule.get("mutate"):
        kind = "MutatingPolicy" if document.get("kind") == "ClusterPolicy" else "NamespacedMutatingPolicy"
        body.update(_mutation(rule))
    else:
        raise Untranslatable("generate rules map to GeneratingPolicy, which needs CEL rewritten by hand")
    if spec.get("background") is False:
        body["evaluation"] = {"background": {"enabled": False}}
    if spec.get("failurePolicy"):
        body["failurePolicy"] = spec["failurePolicy"]
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": out_meta, "spec": body}


def _filters(block: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    if not block:
        return []
    if block.get("all") and len(block["all"]) > 1:
        raise Untranslatable("match.all with several filters has no matchConstraints equivalent")
    entries = block.get("any") or block.get("all") or [block]
    for entry in entries:
        for key in ("subjects", "roles", "clusterRoles"):
            if entry.get(key):
                raise Untranslatable(f"matching on {key} needs a matchCondition on request.userInfo; not converted")
    return [entry.get("resources") or {} for entry in entries]


def _resource_rules(resources: Mapping[str, Any]) -> list[dict]:
    for key in ("names", "name", "annotations", "namespaceSelector"):
        if resources.get(key):
            raise Untranslatable(f"match by {key} is not converted")
    rules = []
    for kind in resources.get("kinds") or []:
        parts = str(kind).split("/")
        if "*" in kind or len(parts) == 2 and not parts[0][:1].islower():
            raise Untranslatable(f"kind {kind!r} (wildcard or subresource) is not converted")
        api_version = "/".join(parts[:-1]) if len(parts) > 1 else ""
        known = api_resource(api_version or _default_version(parts[-1]), parts[-1])
        operations = list(resources.get("operations") or ["CREATE", "UPDATE"])
        rules.append({"apiGroups": [known.group], "apiVersions": [known.version], "operations": operations,
                      "resources": [known.resource]})
    if not rules:
        raise Untranslatable("match names no kinds")
    return rules


def _default_version(kind: str) -> str:
    from webhook.model.apiresources import _BY_KIND  # the built-in table: the preferred version of a kind
    known = _BY_KIND.get(kind)
    return known.api_version if known else "v1"


def _match_constraints(rule: Mapping[str, Any]) -> dict:
    filters = _filters(rule.get("match"))
    rules = [r for resources in filters for r in _resource_rules(resources)]
    constraints: dict[str, Any] = {"resourceRules": rules}
    namespaces = {ns for resources in filters for ns in resources.get("namespaces") or []}
    if namespaces and not any(_wildcard(ns) for ns in namespaces):  # with wildcards: _namespace_conditions
        constraints["namespaceSelector"] = {"matchExpressions": [{"key": "kubernetes.io/metadata.name",
                                                                  "operator": "In", "values": sorted(namespaces)}]}
    selectors = [resources["selector"] for resources in filters if resources.get("selector")]
    if len(selectors) > 1:
        raise Untranslatable("several resource selectors are not converted")
    if selectors:
        constraints["objectSelector"] = copy.deepcopy(selectors[0])
    exclude = rule.get("exclude")
    if exclude:
        excluded = [r for resources in _filters(exclude) for r in _resource_rules(resources)]
        if any(resources.get("namespaces") or resources.get("selector") for resources in _filters(exclude)):
            raise Untranslatable("exclude by namespace or selector is not converted")
        constraints["excludeResourceRules"] = excluded
    return constraints


def _wildcard(name: str) -> bool:
    return "*" in name or "?" in name


_REGEX_SPECIAL = frozenset(".^$+()[]{}|\\")


def _wildcard_regex(pattern: str) -> str:
    """Kyverno's wildcards (`*` any run, `?` one character) as an anchored RE2 expression."""
    body = "".join(".*" if c == "*" else "." if c == "?" else "\\" + c if c in _REGEX_SPECIAL else c for c in pattern)
    return f"^{body}$"


def _namespace_conditions(rule: Mapping[str, Any]) -> list[dict]:
    """Namespaces with wildcards (`team-*`) as a matchCondition on the request's namespace: a namespaceSelector
    can only list exact names. The exact names go into the same expression."""
    namespaces = sorted({ns for resources in _filters(rule.get("match")) for ns in resources.get("namespaces") or []})
    if not any(_wildcard(ns) for ns in namespaces):
        return []
    exact = [ns for ns in namespaces if not _wildcard(ns)]
    tests = [f"request.namespace in {json.dumps(exact)}"] if exact else []
    tests += [f"request.namespace.matches({json.dumps(_wildcard_regex(ns))})" for ns in namespaces if _wildcard(ns)]
    return [{"name": "kyverno-namespaces", "expression": " || ".join(tests)}]


def _validation(rule: Mapping[str, Any], spec: Mapping[str, Any]) -> dict:
    validate = rule["validate"]
    action = str(validate.get("failureAction") or spec.get("validationFailureAction") or "Audit").lower()
    out: dict[str, Any] = {"validationActions": ["Deny"] if action == "enforce" else ["Audit"]}
    message = str(validate.get("message") or f"validation rule {rule.get('name')} failed")
    if validate.get("cel"):
        cel = validate["cel"]
        if cel.get("paramKind") or cel.get("paramRef"):
            raise Untranslatable("paramKind/paramRef move to a binding; not converted")
        out["validations"] = [{**{k: v for k, v in e.items() if k in ("expression", "message", "messageExpression",
                                                                      "reason")},
                               **({} if e.get("message") or e.get("messageExpression") else {"message": message})}
                              for e in cel.get("expressions") or []]
        if cel.get("variables"):
            out["variables"] = copy.deepcopy(cel["variables"])
        if cel.get("auditAnnotations"):
            out["auditAnnotations"] = copy.deepcopy(cel["auditAnnotations"])
        return out
    for feature in ("deny", "foreach", "podSecurity", "manifests"):
        if validate.get(feature) is not None:
            raise Untranslatable(f"validate.{feature} has no faithful CEL translation here")
    patterns = [validate["pattern"]] if validate.get("pattern") is not None else validate.get("anyPattern")
    if not patterns or has_variables(patterns):
        raise Untranslatable("patterns with {{ }} variables need JMESPath translated to CEL")
    expressions = [translate(p) for p in patterns]
    expression = expressions[0] if len(expressions) == 1 else " || ".join(f"({e})" for e in expressions)
    out["validations"] = [{"expression": expression, "message": message}]
    return out


def _mutation(rule: Mapping[str, Any]) -> dict:
    mutate = rule["mutate"]
    patch = mutate.get("patchStrategicMerge")
    if patch is None or mutate.get("patchesJson6902") or mutate.get("foreach"):
        raise Untranslatable("only patchStrategicMerge is converted (JSON patches and foreach need CEL by hand)")
    if has_variables(patch) or _anchored(patch):
        raise Untranslatable("anchors and {{ }} variables in patchStrategicMerge have no ApplyConfiguration form")
    return {"mutations": [{"patchType": "ApplyConfiguration",
                           "applyConfiguration": {"expression": "Object{" + _object_fields(patch, "Object") + "}"}}]}


def _anchored(value: Any) -> bool:
    if isinstance(value, dict):
        return any(parse_anchor(k) is not None or _anchored(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_anchored(v) for v in value)
    return False


def _object_fields(patch: Mapping[str, Any], type_path: str) -> str:
    return ", ".join(f"{key}: {_object_value(value, f'{type_path}.{key}')}" for key, value in patch.items())


# fields whose value is a map[string]string (or quantities) rather than a typed object: CEL map literals
_MAP_FIELDS = {"labels", "annotations", "nodeSelector", "data", "stringData", "matchLabels", "limits", "requests",
               "binaryData", "capacity", "allocatable", "parameters"}


def _object_value(value: Any, type_path: str) -> str:
    if isinstance(value, dict):
        if type_path.rsplit(".", 1)[-1] in _MAP_FIELDS or any(not str(k).isidentifier() for k in value):
            return json.dumps(value)
        return f"{type_path}{{{_object_fields(value, type_path)}}}"
    if isinstance(value, list):
        return "[" + ", ".join(_object_value(v, type_path) for v in value) + "]"
    return json.dumps(value)
