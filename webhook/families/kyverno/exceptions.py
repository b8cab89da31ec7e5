"""Kyverno ``PolicyException`` (kyverno.io/v2, v2beta1): named rules of named policies do not apply to the
resources its ``match`` (and optional ``conditions``) select; those rules report ``skip``."""

from __future__ import annotations

from typing import Any, Mapping

from .conditions import ConditionError, evaluate_conditions
from .gotypes import wildcard_match
from .match import RequestInfo, block_matches
from .podsecurity import exclusion_problems
from .variables import JsonContext

from webhook.model.exception_trust import ANY_RESOURCE, exempts_in
from webhook.model.quickinit import frozen_dataclass

API_VERSIONS = ("kyverno.io/v2", "kyverno.io/v2beta1")


class ExceptionError(ValueError):
    pass


@frozen_dataclass
class PolicyException:
    name: str
    namespace: str
    targets: tuple[tuple[str, tuple[str, ...]], ...]   # (policy "name" or "ns/name", rule names)
    match: Mapping[str, Any]
    conditions: Any = None
    reach: str = ANY_RESOURCE  # the namespace whose resources it may exempt (ExceptionTrust.reach)
    # spec.podSecurity: the Pod Security controls it exempts (podSecurity.exclude entries); empty: the whole rule
    pod_security: tuple[Mapping[str, Any], ...] = ()

    @property
    def key(self) -> str:
        """How Kyverno names it in a skip's message: namespace/name."""
        return f"{self.namespace + '/' if self.namespace else ''}{self.name}"

    def names(self, policy: str) -> bool:
        """Whether it names this policy: "name" a ClusterPolicy, "namespace/name" a Policy (Kyverno's key)."""
        return any(target == policy for target, _ in self.targets)

    def covers(self, policy: str, rule: str) -> bool:
        return any(target == policy and any(wildcard_match(r, rule) for r in rules) for target, rules in self.targets)

    def applies(self, info: RequestInfo, ctx: JsonContext) -> bool:
        if not exempts_in(self.reach, info.namespace, info.kind):
            return False  # an exception of a namespace lifts policies off that namespace's resources only
        if not block_matches(self.match, info):
            return False
        if self.conditions is None:
            return True
        try:
            return evaluate_conditions(self.conditions, ctx).passed
        except ConditionError:
            return False


def compile_exception(document: Mapping[str, Any], reach: str = ANY_RESOURCE) -> PolicyException:
    meta = document.get("metadata") or {}
    spec = document.get("spec") or {}
    targets = []
    for index, entry in enumerate(spec.get("exceptions") or []):
        if not entry.get("policyName") or not entry.get("ruleNames"):
            raise ExceptionError(f"spec.exceptions[{index}] needs policyName and ruleNames")
        targets.append((str(entry["policyName"]), tuple(str(r) for r in entry["ruleNames"])))
    if not targets:
        raise ExceptionError("spec.exceptions must name at least one policy and its rules")
    # exempting single Pod Security controls: never taken as a whole-rule exemption, which would lift far more
    # than written (Kyverno's GHSA-gg4x-fgg2-h9w9 widened such exemptions that way)
    pod_security = tuple(spec.get("podSecurity") or ())
    problems = []
    for index, entry in enumerate(pod_security):
        if not isinstance(entry, Mapping) or not entry.get("controlName"):
            raise ExceptionError(f"spec.podSecurity[{index}] needs controlName")
        problems += exclusion_problems(entry, f"spec.podSecurity[{index}]")
    if problems:
        raise ExceptionError("; ".join(problems))
    if not isinstance(spec.get("match"), Mapping):
        raise ExceptionError("spec.match is required")
    return PolicyException(str(meta.get("name") or ""), str(meta.get("namespace") or ""), tuple(targets),
                           spec["match"], spec.get("conditions"), reach, pod_security)
