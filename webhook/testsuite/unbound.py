"""Admission policies without a binding, as `kyverno test` reads them (runner only).

In a cluster a ValidatingAdmissionPolicy or MutatingAdmissionPolicy that no binding names does nothing,
and `serve` keeps it so. The Kyverno CLI instead evaluates such a policy on every resource its own
`matchConstraints` select (`pkg/admissionpolicy`: processVAPNoBindings / processMAPNoBindings): with
`params` null whatever its `paramKind`, a failed validation reported as `fail` (no validationActions
to soften it), false match conditions as `skip`. The runner reproduces that by giving each such
policy one stand-in binding.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from webhook.families.cel.mutating import MutatingAdmissionPolicy
from webhook.families.cel.validating import Binding, ValidatingAdmissionPolicy

STAND_IN = Binding(name="", actions=frozenset({"Deny"}), match=None, param_ref=None, stand_in=True)


def bind_unbound(policies: Sequence[Any]) -> list[Any]:
    """The suite's compiled policies, each unbound admission policy with the CLI's stand-in binding."""
    out = []
    for policy in policies:
        if (isinstance(policy, (ValidatingAdmissionPolicy, MutatingAdmissionPolicy)) and not policy.bindings
                and policy.error is None):
            policy = replace(policy, bindings=(STAND_IN,))
        out.append(policy)
    return out
