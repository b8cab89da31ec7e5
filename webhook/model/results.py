"""What happened when a rule ran (Kyverno's pass/fail/warn/error/skip), kept apart from what to do about it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


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


@dataclass(frozen=True)
class RuleResult:
    policy: str
    rule: str
    outcome: Outcome
    message: str = ""
    action: Action = Action.ENFORCE

    @property
    def blocks(self) -> bool:
        return self.outcome in (Outcome.FAIL, Outcome.ERROR) and self.action is Action.ENFORCE

    @property
    def reported(self) -> bool:
        """A failure that is let through: the user gets a warning, the platform team a report entry."""
        return self.outcome in (Outcome.FAIL, Outcome.ERROR, Outcome.WARN) and not self.blocks


def passed(policy: str, rule: str, message: str = "") -> RuleResult:
    return RuleResult(policy, rule, Outcome.PASS, message)


def failed(policy: str, rule: str, message: str, action: Action = Action.ENFORCE) -> RuleResult:
    return RuleResult(policy, rule, Outcome.FAIL, message, action)


def skipped(policy: str, rule: str, message: str = "") -> RuleResult:
    return RuleResult(policy, rule, Outcome.SKIP, message)


def errored(policy: str, rule: str, message: str, action: Action = Action.ENFORCE) -> RuleResult:
    return RuleResult(policy, rule, Outcome.ERROR, message, action)
