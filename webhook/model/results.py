"""What happened when a rule ran (Kyverno's pass/fail/warn/error/skip), kept apart from what to do about it."""

from __future__ import annotations

from enum import Enum
from functools import cached_property

from webhook.model import kubetext
from webhook.model.quickinit import frozen_dataclass


@frozen_dataclass(order=True)
class PolicyId:
    """The full identity of a policy: two kinds may use the same name, a namespaced kind repeats names per namespace."""

    api_version: str
    kind: str
    name: str
    namespace: str = ""  # namespaced policy kinds only

    def __str__(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}" if self.namespace else f"{self.kind}/{self.name}"

    @property
    def qualified_name(self) -> str:
        """What users call it in messages and reports: "name", or "namespace/name" for a namespaced policy."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


class Outcome(str, Enum):
    PASS = "pass"
    FAIL = "fail"
    WARN = "warn"
    ERROR = "error"
    SKIP = "skip"


class Action(str, Enum):
    """What a failing rule does: block the request, or only report it."""

    ENFORCE = "Enforce"
    AUDIT = "Audit"


_FAILED = frozenset({Outcome.FAIL, Outcome.ERROR})
_FLAGGED = frozenset({Outcome.FAIL, Outcome.ERROR, Outcome.WARN})


@frozen_dataclass(dict_init=True)
class RuleResult:
    policy: PolicyId
    rule: str
    outcome: Outcome
    message: str = ""
    action: Action = Action.ENFORCE
    # a denial's status.reason when this result blocks (ValidatingAdmissionPolicy's `reason`); "" is Forbidden
    reason: str = ""
    # audit annotations the policy computed (ValidatingAdmissionPolicy's auditAnnotations), key -> value
    audit: tuple[tuple[str, str], ...] = ()
    # extra PolicyReport result properties the policy asks for (Kyverno's rule reportProperties), key -> value
    properties: tuple[tuple[str, str], ...] = ()
    # reported (PolicyReports, audit annotation) but not warned to the user: a ValidatingAdmissionPolicy binding
    # without Warn among its validationActions, as the API server treats it
    quiet: bool = False

    # computed once per result (the fields are frozen): the verdict, the log, the metrics and the reports
    # each ask, for every result of every admission
    @cached_property
    def blocks(self) -> bool:
        return self.outcome in _FAILED and self.action is Action.ENFORCE

    @cached_property
    def reported(self) -> bool:
        """A failure that is let through: the user gets a warning, the platform team a report entry."""
        return self.outcome in _FLAGGED and not self.blocks

    # a short form of the message for the warning kubectl prints (under 120 characters with the policy
    # name); the message keeps the whole text for denials, reports and logs
    summary: str = ""

    @property
    def warning(self) -> str:
        return f"{self.policy.qualified_name}: {self.summary or self.message}"

    # a policy's prebuilt results come back with every admission it fails: their warning and annotation
    # key are cleaned once, not per admission
    @cached_property
    def warning_text(self) -> str:
        """`warning` as kubectl gets it (kubetext.clean_warning)."""
        return kubetext.clean_warning(self.warning)

    @cached_property
    def counted_as(self) -> tuple[str, str, str, str, str]:
        """(policy as users name it, policy kind, rule, outcome, action): what metrics count it under."""
        return (self.policy.qualified_name, self.policy.kind, self.rule, self.outcome.value, self.action.value)

    @cached_property
    def annotation_key(self) -> str:
        """The audit annotation key this result's message goes under (kubetext.annotation_key)."""
        return kubetext.annotation_key(self.policy.qualified_name, self.rule)


def passed(policy: PolicyId, rule: str, message: str = "") -> RuleResult:
    return RuleResult(policy, rule, Outcome.PASS, message)


def failed(policy: PolicyId, rule: str, message: str, action: Action = Action.ENFORCE, summary: str = "") -> RuleResult:
    return RuleResult(policy, rule, Outcome.FAIL, message, action, summary=summary)


def skipped(policy: PolicyId, rule: str, message: str = "") -> RuleResult:
    return RuleResult(policy, rule, Outcome.SKIP, message)


def errored(policy: PolicyId, rule: str, message: str, action: Action = Action.ENFORCE) -> RuleResult:
    return RuleResult(policy, rule, Outcome.ERROR, message, action)


def warned(policy: PolicyId, rule: str, message: str) -> RuleResult:
    """A rule that asks only for a warning (Kyverno's warn, a Warn validation action): never blocks."""
    return RuleResult(policy, rule, Outcome.WARN, message, Action.AUDIT)
