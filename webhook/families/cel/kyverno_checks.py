"""Kyverno's own checks of its CEL policy kinds, beyond their schema (pkg/cel/policies/*/validate.go of the
pinned release), with its words: Kyverno refuses such a policy when it is applied, so it does not load here.

- every kind: a `matchConstraints` with at least one resource rule (a JSON-payload policy, `evaluation.mode:
  JSON`, matches no Kubernetes resource and is exempt);
- a MutatingPolicy: admission and mutateExisting may not both be disabled (it would never run);
- a namespaced policy: no `globalContext` and no `http` in any expression (Kyverno's default; its
  --allowHTTPInNamespacedPolicies has no counterpart here).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from webhook.cel.source import root_identifiers, tokenize
from webhook.families.cel.base import enabled, spec_value
from webhook.families.cel.scope import CompileFailed, Expr

_FORBIDDEN_IN_NAMESPACED = (("globalContext", "globalContext.* is not allowed in namespaced policies"),
                            ("http", "http.* is not allowed in namespaced policies"))


def check_kyverno_spec(kind: str, spec: Mapping[str, Any]) -> None:
    """Raises CompileFailed for what Kyverno's policy validation refuses in the spec. `kind` without `Namespaced`."""
    if spec_value(spec, "evaluation", "mode") != "JSON" and not spec_value(spec, "matchConstraints", "resourceRules"):
        raise CompileFailed("spec.matchConstraints", "a matchConstraints with at least one resource rule is required")
    if kind == "MutatingPolicy" and not enabled(spec, "evaluation", "admission", "enabled") \
            and not enabled(spec, "evaluation", "mutateExisting", "enabled", default=False):
        raise CompileFailed("spec.evaluation", "disabling both admission and mutateExisting evaluation modes is not "
                            "allowed")


def check_namespaced_expressions(exprs: Sequence[Expr]) -> None:
    """A namespaced policy's expressions, every one its compile compiled (template interpolations too): raises
    CompileFailed for a use of `globalContext` or `http`."""
    names = frozenset().union(*(root_identifiers(tokenize(expr.text)) for expr in exprs))
    for name, message in _FORBIDDEN_IN_NAMESPACED:
        if name in names:
            raise CompileFailed("spec", message)
