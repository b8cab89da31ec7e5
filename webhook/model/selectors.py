"""metav1.LabelSelector semantics (matchLabels AND matchExpressions), used by every matcher."""

from __future__ import annotations

from typing import Any, Mapping

from webhook.model.quickinit import frozen_dataclass

_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


@frozen_dataclass
class Requirement:
    key: str
    operator: str
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        if self.operator == "In":
            return present and labels[self.key] in self.values
        return not present or labels[self.key] not in self.values  # NotIn


@frozen_dataclass
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()
    everything: bool = True

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        requirements = self.requirements
        if not requirements:
            return True
        labels = labels or {}
        if len(requirements) == 1:  # most selectors (a battery's, a policy's matchLabels): no generator
            return requirements[0].matches(labels)
        return all(r.matches(labels) for r in requirements)


MATCH_ALL = LabelSelector()


def parse_selector(raw: Mapping[str, Any] | None) -> LabelSelector:
    """An absent selector matches everything; an empty one ({}) too, as in Kubernetes webhooks."""
    if not raw:
        return MATCH_ALL
    reqs = [Requirement(str(k), "In", frozenset({str(v)})) for k, v in (raw.get("matchLabels") or {}).items()]
    for expr in raw.get("matchExpressions") or []:
        op = expr.get("operator")
        if op not in _OPERATORS:
            raise ValueError(f"operator must be one of {sorted(_OPERATORS)}, got {op!r}")
        values = frozenset(str(v) for v in expr.get("values") or [])
        if op in ("In", "NotIn") and not values:
            raise ValueError(f"operator {op} needs values")
        reqs.append(Requirement(str(expr.get("key")), op, values))
    return LabelSelector(tuple(reqs), everything=not reqs)
