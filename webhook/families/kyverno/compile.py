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
from .spec_checks import SpecRefused, check_spec
from .compile_rules import RULE_TYPES, RuleCompileError, TypedRule, compile_rule
from .conditions import OPERATORS
from .fields import unknown_fields
from .gotypes import wildcard_match
from .jmespath_functions import JMESPathError, check_query
from .match import labels_match
from .references import unsupported_references
from .rule_types import GenerateRule, MutateRule, ValidateRule
from .variables import written_queries

from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Action, PolicyId

POLICY_KINDS = ("ClusterPolicy", "Policy")
API_VERSIONS = ("kyverno.io/v1", "kyverno.io/v2beta1")
_VALIDATE_FORMS = ("pattern", "anyPattern", "deny", "foreach", "podSecurity", "cel", "manifests", "assert")


class PolicyError(ValueError):
    """A policy that cannot be loaded; the message names the rule and field."""


@frozen_dataclass
class KyvernoPolicy:
    id: PolicyId
    annotations: Mapping[str, str]
    rules: tuple[TypedRule, ...]     # every rule, autogen included, in the policy's order
    # the rules autogen made, as written (Kyverno shows them in the object's status.autogen.rules)
    autogen: tuple[Mapping[str, Any], ...] = ()
    background: bool = True
    failure_policy: str = "Fail"
    apply_one: bool = False
    admission: bool = True
    action: Action = Action.AUDIT    # spec.validationFailureAction, normalised
    # the rules by type, in order: each phase walks only its own
    validate_rules: tuple[ValidateRule, ...] = field(default_factory=tuple)
    mutate_rules: tuple[MutateRule, ...] = field(default_factory=tuple)
    generate_rules: tuple[GenerateRule, ...] = field(default_factory=tuple)

    @property
    def name(self) -> str:
        return self.id.name

    @property
    def namespace(self) -> str:
        return self.id.namespace


def normalise_action(value: Any, where: str) -> Action:
    text = str(value or "Audit")
    lowered = text.lower()
    if lowered not in ("audit", "enforce"):
        raise PolicyError(f"{where}: validationFailureAction must be Audit or Enforce, got {text!r}")
    return Action.ENFORCE if lowered == "enforce" else Action.AUDIT


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
    try:
        check_spec(spec, namespaced=document.get("kind") == "Policy")
    except SpecRefused as exc:
        raise PolicyError(f"{name}: {exc}") from None
    policy_id = PolicyId(str(document.get("apiVersion")), str(document.get("kind")), name,
                         str(meta.get("namespace") or "") if document.get("kind") == "Policy" else "")
    expanded = expand_rules(dict(document))
    rules = tuple(_compile_rule(policy_id, raw, action, cel) for raw in expanded)
    written = {id(rule) for rule in spec["rules"]}
    failure_policy = str(spec.get("failurePolicy") or "Fail")
    if failure_policy not in ("Fail", "Ignore"):
        raise PolicyError(f"{name}: spec.failurePolicy must be Fail or Ignore, got {failure_policy!r}")
    return KyvernoPolicy(
        id=policy_id, annotations=dict(meta.get("annotations") or {}), rules=rules,
        autogen=tuple(rule for rule in expanded if id(rule) not in written),
        background=spec.get("background", True) is not False, failure_policy=failure_policy,
        apply_one=str(spec.get("applyRules") or "All") == "One", admission=spec.get("admission", True) is not False,
        action=action, validate_rules=tuple(r for r in rules if isinstance(r, ValidateRule)),
        mutate_rules=tuple(r for r in rules if isinstance(r, MutateRule)),
        generate_rules=tuple(r for r in rules if isinstance(r, GenerateRule)))


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
    present = [t for t in RULE_TYPES if rule.get(t)]
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


def _compile_rule(policy: PolicyId, raw: Mapping[str, Any], action: Action, cel: Any) -> TypedRule:
    validate = raw.get("validate") or {}
    if validate.get("failureAction"):
        action = normalise_action(validate["failureAction"], f"{policy.name}: rule {raw['name']} validate")
    try:
        return compile_rule(policy, raw, action, cel)
    except RuleCompileError as exc:
        raise PolicyError(f"{policy.name}: rule {raw['name']}: {exc}") from exc


def effective_action(rule: ValidateRule, spec_action: Action, spec_overrides: Any, namespace: str,
                     namespace_labels: Mapping[str, str] | None) -> Action:
    """Kyverno's order (pkg/engine/api EngineResponse): the rule's failureActionOverrides, its failureAction, the
    spec's validationFailureActionOverrides, then the spec's validationFailureAction."""
    for overrides, explicit in ((rule.action_overrides, rule.explicit_action), (spec_overrides, False)):
        found = _match_override(overrides, namespace, namespace_labels)
        if found:
            return found
        if explicit:
            return rule.action
    return spec_action


def _match_override(overrides: Any, namespace: str, labels: Mapping[str, str] | None) -> Action | None:
    """The first override whose action is valid and whose namespaces (wildcards) and namespaceSelector hold; an
    override without namespaces applies everywhere its selector (if any) holds."""
    for override in overrides or []:
        try:
            action = normalise_action(override.get("action"), "failureActionOverrides")
        except PolicyError:
            continue   # Kyverno skips an override whose action is not valid
        selector = override.get("namespaceSelector")
        selected = selector is None or labels_match(selector, labels or {})
        namespaces = override.get("namespaces")
        if namespaces is None and selected:
            return action
        if selected and any(wildcard_match(str(ns), namespace) for ns in namespaces or []):
            return action
    return None
