"""ValidatingAdmissionPolicy and MutatingAdmissionPolicy as `kyverno test` reads them (runner only).

`serve` follows the API server; the Kyverno CLI, evaluating offline (`pkg/admissionpolicy`, the paths
without a cluster client), departs from it in three ways the runner reproduces:

- a policy that no binding names is evaluated on every resource its own `matchConstraints` select
  (processVAPNoBindings / processMAPNoBindings): `params` null whatever its `paramKind`, a failed
  validation reported as `fail` (no validationActions to soften it), false match conditions as `skip`.
  In a cluster such a policy does nothing. Here it gets one stand-in binding.
- a policy with bindings is not matched against its own `matchConstraints` at all
  (processVAPWithoutClient / processMAPWithoutClient): only each binding's `matchResources` select.
- a binding's paramRef `selector` hands the objects it finds to the policy together, as one
  `params` object `{items: [...]}` in the order of the suite's `paramResources`; the API server
  evaluates once per object.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from webhook.families.cel.match import MatchResources
from webhook.families.cel.mutating import MutatingAdmissionPolicy
from webhook.families.cel.validating import Binding, ValidatingAdmissionPolicy

STAND_IN = Binding(name="", actions=frozenset({"Deny"}), match=None, param_ref=None, stand_in=True)
_EVERYTHING = MatchResources()  # no rules, no selectors: matches every request


def as_kyverno_cli(policies: Sequence[Any]) -> list[Any]:
    """The suite's compiled policies, the admission policies among them read as the Kyverno CLI reads them."""
    return [_cli(p) if isinstance(p, (ValidatingAdmissionPolicy, MutatingAdmissionPolicy)) and p.error is None
            else p for p in policies]


def _cli(policy: Any) -> Any:
    if not policy.bindings:
        return replace(policy, bindings=(STAND_IN,))
    return replace(policy, bindings=tuple(replace(b, params_list=True) for b in policy.bindings),
                   variants=tuple(replace(v, match=_EVERYTHING) for v in policy.variants))
