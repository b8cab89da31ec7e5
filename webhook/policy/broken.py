"""Policies that loaded with a compile error kept as a value, described once for everyone who shows them.

Such a policy is served: its failure policy answers every request it matches (Fail: a denial of each one).
`serve` logs each at load, lists them in /readyz and counts them; `validate` reports them as problems. Both
read this module, so the two say the same thing about the same load.
"""

from __future__ import annotations

from typing import Sequence

from webhook.model.policy import CompiledPolicy, FailurePolicy, PolicyId, SourceRef
from webhook.model.quickinit import frozen_dataclass


@frozen_dataclass
class BrokenPolicy:
    id: PolicyId
    source: SourceRef
    detail: str  # "field <path>: <message>", or ": <message>" when the error names no field
    action: str  # the failure policy that answers for it: Fail or Ignore

    def describe(self, file: str | None = None) -> str:
        """One line; `file` replaces the source file's name (validate prints the path as the user wrote it)."""
        return (f"{file or self.source.file}: document {self.source.document}{self.detail} ({self.id} would answer "
                f"every request it matches with its failure policy, {self.action})")


def broken_policies(policies: Sequence[CompiledPolicy]) -> tuple[BrokenPolicy, ...]:
    out = []
    for policy in policies:
        if policy.error is None:
            continue
        prefix = f"{policy.source} "
        detail = f" field {policy.error[len(prefix):]}" if policy.error.startswith(prefix) else f": {policy.error}"
        out.append(BrokenPolicy(policy.id, policy.source, detail, FailurePolicy(policy.failure_policy).value))
    return tuple(out)
