"""Compile a ``kyverno.io`` ClusterPolicy/Policy document: schema checks, autogen, CEL and PSS compiled once.

Problems are load errors that name the policy, the rule and the field. Features this engine does not implement
(``verifyImages``, ``imageExtractors``, ``validate.manifests``, ``mutate.targets``,
``mutate.mutateExistingOnPolicyUpdate``, misplaced ``$(...)`` references, fields outside the schema) are errors
that name the rule and the feature, never silently ignored.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Mapping

from .autogen import expand_rules
from .conditions import OPERATORS
from .engine import CompiledRule
from .fields import unknown_fields
from .jmespath_functions import JMESPathError, check_query
from .references import resolve_rule, unsupported_references
from .variables import written_queries

from webhook.model.quickinit import frozen_dataclass

POLICY_KINDS = ("ClusterPolicy", "Policy")
API_VERSIONS = ("kyverno.io/v1", "kyverno.io/v2beta1")
_RULE_TYPES = ("validate", "mutate", "generate", "verifyImages")
_VALIDATE_FORMS = ("pattern", "anyPattern", "deny", "foreach", "podSecurity", "cel", "manifests", "assert")


class PolicyError(ValueError):
    """A policy that cannot be loaded; the message names the rule and field."""


@frozen_dataclass
class KyvernoPolicy:
    api_version: str
    kind: str
    name: str
    namespace: str
    annotations: Mapping[str, str]
    rules: tuple[CompiledRule, ...]
    background: bool = True
    failure_policy: str = "Fail"
    apply_one: bool = False
    admission: bool = True
    exceptions: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)
    action: str = "Audit"          # spec.validationFailureAction, normalised

    @property
    def phases(self) -> frozenset[str]:
        return frozenset(r.kind for r in self.rules)


def normalise_action(value: Any, where: str) -> str:
    text = str(value or "Audit")
    lowered = text.lower()
    if lowered not in ("audit", "enforce"):
        raise PolicyError(f"{where}: validationFailureAction must be Audit or Enforce, got {text!r}")
    return "Enforce" if lowered == "enforce" else "Audit"


def compile_policy(document: Mapping[str, Any], cel: Any = None) -> KyvernoPolicy:
    meta = document.get("metadata") or {}
    name = str(meta.get("name") or "")
    if not name:
        raise PolicyError("metadata.name is required")
    spec = document.get("spec")
    if not isinstance(spec, Mapping) or not isinstance(spec.get("rules"), list) or not spec["rules"]:
        raise PolicyError(f"{document.get('kind')} {name}: spec.rules must be a non-empty list")
    action = normalise_action(spec.get("validationFailureAction"), f"{name}: spec")
    seen: set[str] = set()
    for index, rule in enumerate(spec["rules"]):
        _check_rule(name, index, rule, seen)
    rules = tuple(_compile_rule(name, raw, action, spec, cel) for raw in expand_rules(dict(document)))
    failure_policy = str(spec.get("failurePolicy") or "Fail")
    if failure_policy not in ("Fail", "Ignore"):
        raise PolicyError(f"{name}: spec.failurePolicy must be Fail or Ignore, got {failure_policy!r}")
    return KyvernoPolicy(
        api_version=str(document.get("apiVersion")), kind=str(document.get("kind")), name=name,
        namespace=str(meta.get("namespace") or "") if document.get("kind") == "Policy" else "",
        annotations=dict(meta.get("annotations") or {}), rules=rules,
        background=spec.get("background", True) is not False, failure_policy=failure_policy,
        apply_one=str(spec.get("applyRules") or "All") == "One", admission=spec.get("admission", True) is not False,
        action=action)


def _check_rule(policy: str, index: int, rule: Any, seen: set[str]) -> None:
    where = f"{policy}: spec.rules[{index}]"
    if not isinstance(rule, Mapping):
        raise PolicyError(f"{where}: must be a mapping")
    rule_name = rule.get("name")
    if not isinstance(rule_name, str) or not rule_name:
        raise PolicyError(f"{where}.name is required")
    if rule_name in seen:
        raise PolicyError(f"{where}: duplicate rule name {rule_name!r}")
    seen.add(rule_name)
    where = f"{policy}: rule {rule_name}"
    present = [t for t in _RULE_TYPES if rule.get(t)]
    if len(present) != 1:
        raise PolicyError(f"{where}: needs exactly one of validate, mutate, generate (found {present or 'none'})")
    if present[0] == "verifyImages":
        raise PolicyError(f"{where}: verifyImages is not supported (image signature verification needs registry "
                          "access); remove the rule or verify images elsewhere")
    if not isinstance(rule.get("match"), Mapping):
        raise PolicyError(f"{where}: match is required")
    unknown = unknown_fields(rule)
    if unknown:
        raise PolicyError(f"{where}: unknown field(s) {', '.join(unknown)} (not in Kyverno's kyverno.io/v1 rule schema)")
    _check_unsupported(where, rule)
    _check_conditions(where, rule.get("preconditions"))
    for path, query in written_queries(rule):  # a query nesting past the interpreter's depth: refused here
        try:
            check_query(query)
        except JMESPathError as exc:
            raise PolicyError(f"{where}: {path}: {exc}") from None
    misplaced = unsupported_references(rule)
    if misplaced:
        raise PolicyError(f"{where}: $(...) references are resolved only in validate pattern/anyPattern and mutate "
                          f"patches; not supported at {', '.join(misplaced)}")


def _check_unsupported(where: str, rule: Mapping[str, Any]) -> None:
    validate, mutate, generate = rule.get("validate"), rule.get("mutate"), rule.get("generate")
    if validate:
        forms = [f for f in _VALIDATE_FORMS if validate.get(f) is not None]
        if not forms:
            raise PolicyError(f"{where}: validate needs one of pattern, anyPattern, deny, foreach, podSecurity, cel")
        for feature in ("manifests", "assert"):
            if feature in forms:
                raise PolicyError(f"{where}: validate.{feature} is not supported")
        _check_conditions(where + " validate.deny", (validate.get("deny") or {}).get("conditions"))
    if rule.get("imageExtractors"):
        raise PolicyError(f"{where}: imageExtractors (custom image locations for images/verifyImages) is not supported")
    if mutate:
        if mutate.get("mutateExistingOnPolicyUpdate"):
            raise PolicyError(f"{where}: mutate.mutateExistingOnPolicyUpdate (mutate existing resources) is not "
                              "supported by this engine")
        if mutate.get("targets"):
            raise PolicyError(f"{where}: mutate.targets (mutate existing resources) is not supported by this engine")
        if not any(mutate.get(k) for k in ("patchStrategicMerge", "patchesJson6902", "foreach")):
            raise PolicyError(f"{where}: mutate needs patchStrategicMerge, patchesJson6902 or foreach")
    if generate:
        if generate.get("foreach"):
            raise PolicyError(f"{where}: generate.foreach is not supported")


def _check_conditions(where: str, conditions: Any) -> None:
    blocks = conditions if isinstance(conditions, list) else [conditions] if conditions else []
    for block in blocks:
        items = (block.get("any") or []) + (block.get("all") or []) if isinstance(block, Mapping) and (
            "any" in block or "all" in block) else [block]
        for item in items:
            operator = str((item or {}).get("operator", "")).lower()
            if operator not in OPERATORS:
                raise PolicyError(f"{where}: unknown condition operator {(item or {}).get('operator')!r}")


def _compile_rule(policy: str, raw: Mapping[str, Any], action: str, spec: Mapping[str, Any], cel: Any) -> CompiledRule:
    kind = next(t for t in _RULE_TYPES if raw.get(t))
    raw = resolve_rule(raw)   # $(...) point into the policy itself: resolved once, here
    validate = raw.get("validate") or {}
    rule_action = action
    if validate.get("failureAction"):
        rule_action = normalise_action(validate["failureAction"], f"{policy}: rule {raw['name']} validate")
    compiled_cel = pss = None
    if validate.get("cel") is not None:
        if cel is None:
            raise PolicyError(f"{policy}: rule {raw['name']}: validate.cel needs the CEL engine")
        from .cel_rule import compile_cel
        try:
            compiled_cel = compile_cel(validate["cel"], cel, str(validate.get("message") or ""))
        except Exception as exc:  # the CEL engine's error names the expression
            raise PolicyError(f"{policy}: rule {raw['name']}: validate.cel: {exc}") from exc
    if validate.get("podSecurity") is not None:
        from .podsecurity import compile_pod_security
        try:
            pss = compile_pod_security(validate["podSecurity"])
        except ValueError as exc:
            raise PolicyError(f"{policy}: rule {raw['name']}: validate.podSecurity: {exc}") from exc
    cel_pre = ()
    if raw.get("celPreconditions"):
        if cel is None:
            raise PolicyError(f"{policy}: rule {raw['name']}: celPreconditions need the CEL engine")
        from .cel_rule import compile_preconditions
        try:
            cel_pre = compile_preconditions(raw["celPreconditions"], cel)
        except Exception as exc:  # the CEL engine's error names the expression
            raise PolicyError(f"{policy}: rule {raw['name']}: celPreconditions: {exc}") from exc
    return CompiledRule(name=str(raw["name"]), raw=raw, kind=kind, action=rule_action, cel=compiled_cel, pss=pss,
                        cel_preconditions=cel_pre)


def effective_action(rule: CompiledRule, spec_action: str, spec_overrides: Any, namespace: str,
                     namespace_labels: Mapping[str, str] | None) -> str:
    """Kyverno's order (pkg/engine/api EngineResponse): the rule's failureActionOverrides, its failureAction, the
    spec's validationFailureActionOverrides, then the spec's validationFailureAction."""
    validate = rule.raw.get("validate") or {}
    for overrides, explicit in ((validate.get("failureActionOverrides"), validate.get("failureAction")),
                                (spec_overrides, None)):
        found = _match_override(overrides, namespace, namespace_labels)
        if found:
            return found
        if explicit:
            return rule.action
    return spec_action


def _match_override(overrides: Any, namespace: str, labels: Mapping[str, str] | None) -> str | None:
    """The first override whose action is valid and whose namespaces (wildcards) and namespaceSelector hold; an
    override without namespaces applies everywhere its selector (if any) holds."""
    from .gotypes import wildcard_match
    from .match import _labels_match
    for override in overrides or []:
        try:
            action = normalise_action(override.get("action"), "failureActionOverrides")
        except PolicyError:
            continue   # Kyverno skips an override whose action is not valid
        selector = override.get("namespaceSelector")
        selected = selector is None or _labels_match(selector, labels or {})
        namespaces = override.get("namespaces")
        if namespaces is None and selected:
            return action
        if selected and any(wildcard_match(str(ns), namespace) for ns in namespaces or []):
            return action
    return None
