"""What the rules of one policy may read for one request, beside the request itself."""

from __future__ import annotations

from dataclasses import field
from typing import Any, Callable, Mapping

from webhook.model.quickinit import frozen_dataclass


@frozen_dataclass
class RuleEnv:
    """Per-request evaluation inputs shared by all rules of a policy."""

    lookups: Any = None                     # webhook.model.lookups.Lookups (duck-typed: get/list/http/...)
    overrides: Mapping[str, Any] = field(default_factory=dict)   # test-supplied values by name/dotted path
    namespace_object: Mapping[str, Any] | None = None
    # a test's values for one rule (global, rule and resource values merged), by rule name
    rule_values: Callable[[str], Mapping[str, Any]] | None = None
    # a test's foreachValues for one rule: per context entry name, one value per foreach element
    rule_foreach_values: Callable[[str], Mapping[str, list]] | None = None
    foreach_values: Mapping[str, list] = field(default_factory=dict)
    deadline: float = float("inf")  # time.monotonic() by which the request is answered (EvalContext.deadline)
    policy_namespace: str = ""  # a namespaced Policy's namespace: the only one it reads and generates into
    # the request's EvalContext.memo: what every policy of one admission would otherwise build again (the
    # match view, the images); per request, so worker threads of other requests never share it
    memo: dict[Any, Any] = field(default_factory=dict, repr=False)

    def for_rule(self, rule: str) -> "RuleEnv":
        if self.rule_values is None:
            return self
        values = self.rule_values(rule)
        per_element = self.rule_foreach_values(rule) if self.rule_foreach_values else {}
        return RuleEnv(self.lookups, {**self.overrides, **values}, self.namespace_object,
                       foreach_values=per_element, deadline=self.deadline, policy_namespace=self.policy_namespace,
                       memo=self.memo)

    def for_element(self, index: int) -> "RuleEnv":
        """Values a test gives the context entries of the index-th foreach element."""
        if not self.foreach_values:
            return self
        picked = {name: values[index] for name, values in self.foreach_values.items() if index < len(values)}
        return RuleEnv(self.lookups, {**self.overrides, **picked}, self.namespace_object,
                       foreach_values=self.foreach_values, deadline=self.deadline,
                       policy_namespace=self.policy_namespace, memo=self.memo)
