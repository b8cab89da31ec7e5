"""The checks Kyverno makes of a policy's spec before it accepts one (its `Spec.Validate`, `UserInfo.ValidateSubjects`
and pkg/validation/policy), with Kyverno's wording: a policy Kyverno refuses at `kubectl apply` is refused here too,
at load and by the policy webhook, instead of loading and then doing something Kyverno never would.

Kinds are checked without a discovery endpoint: a subresource is what the kind names after its `/` (`Pod/exec`,
`*/status`), or `Scale`, the kind only the scale subresources serve.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from .match import parse_kind_selector
from .podsecurity import exclusion_problems

SUBJECT_KINDS = ("User", "Group", "ServiceAccount")
SUBRESOURCE_ONLY_KINDS = ("Scale",)


class SpecRefused(ValueError):
    """What Kyverno says of a policy it refuses; the caller names the policy."""


def check_spec(spec: Mapping[str, Any], namespaced: bool) -> None:
    admission = spec.get("admission", True) is not False
    background = spec.get("background", True) is not False
    rules = [rule for rule in spec.get("rules") or [] if isinstance(rule, Mapping)]
    if not admission and not background:
        raise SpecRefused("disabling both admission and background processing is not allowed")
    if not admission and any(rule.get(kind) for rule in rules for kind in ("mutate", "generate", "verifyImages")):
        raise SpecRefused("disabling admission processing is only allowed with validation policies")
    for field in ("webhookTimeoutSeconds", "webhookConfiguration.timeoutSeconds"):
        value = _dotted(spec, field)
        if value is not None and (not isinstance(value, int) or not 1 <= value <= 30):
            raise SpecRefused(f"spec.{field}: Invalid value: {value}: the timeout value must be between 1 and 30 seconds")
    if namespaced and spec.get("validationFailureActionOverrides"):
        raise SpecRefused("spec.validationFailureActionOverrides: Forbidden: Use of validationFailureActionOverrides "
                          "is supported only with ClusterPolicy")
    for index, rule in enumerate(rules):
        _check_rule(f"spec.rules[{index}]", rule, background)


def _check_rule(path: str, rule: Mapping[str, Any], background: bool) -> None:
    validate = rule.get("validate") if isinstance(rule.get("validate"), Mapping) else {}
    if rule.get("celPreconditions") and not validate.get("cel"):
        raise SpecRefused(f"{path}.celPreconditions: Forbidden: celPrecondition can only be used with validate.cel")
    pod_security = validate.get("podSecurity") if isinstance(validate.get("podSecurity"), Mapping) else {}
    problems = [problem for number, entry in enumerate(pod_security.get("exclude") or []) if isinstance(entry, Mapping)
                for problem in exclusion_problems(entry, f"{path}.podSecurity.exclude[{number}]")]
    if problems:
        raise SpecRefused("; ".join(problems))
    for where, block in _filters(path, rule):
        for number, subject in enumerate(block.get("subjects") or []):
            _check_subject(f"{where}.subjects[{number}]", subject)
        for number, role in enumerate(block.get("roles") or []):
            if len(str(role).split(":")) != 2:
                raise SpecRefused(f"{where}.roles[{number}]: Invalid value: {role!r}: Role is expected to be in "
                                  "namespace:name format")
        kinds = (block.get("resources") or {}).get("kinds") or []
        if background and rule.get("validate"):
            for kind in kinds:
                if _subresource(str(kind)):
                    raise SpecRefused(f"{where}.kinds: background scan enabled with subresource {kind}")


def _check_subject(where: str, subject: Any) -> None:
    subject = subject if isinstance(subject, Mapping) else {}
    kind = subject.get("kind") or ""
    if not kind:
        raise SpecRefused(f"{where}.kind: Required value")
    if kind not in SUBJECT_KINDS:
        raise SpecRefused(f"{where}.kind: Invalid value: {kind!r}: kind must be 'User', 'Group', or 'ServiceAccount'")
    if not subject.get("name"):
        raise SpecRefused(f"{where}.name: Required value")
    if kind == "ServiceAccount" and not subject.get("namespace"):
        raise SpecRefused(f"{where}.namespace: Required value: namespace is required when Kind is ServiceAccount")


def _filters(path: str, rule: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each resource filter of match and exclude (any, all, or the block itself), with its path."""
    for side in ("match", "exclude"):
        block = rule.get(side)
        if not isinstance(block, Mapping):
            continue
        for combine in ("any", "all"):
            for number, entry in enumerate(block.get(combine) or []):
                if isinstance(entry, Mapping):
                    yield f"{path}.{side}.{combine}[{number}]", entry
        yield f"{path}.{side}", block


def _subresource(selector: str) -> bool:
    _, _, kind, subresource = parse_kind_selector(selector)
    return bool(subresource) or kind in SUBRESOURCE_ONLY_KINDS


def _dotted(mapping: Mapping[str, Any], path: str) -> Any:
    node: Any = mapping
    for step in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(step)
    return node
