"""Kyverno's own checks of its CEL policy kinds, beyond their schema (pkg/cel/policies/*/validate.go of the
pinned release), with its words: Kyverno refuses such a policy when it is applied, so it does not load here.

- every kind: a `matchConstraints` with at least one resource rule (a JSON-payload policy, `evaluation.mode:
  JSON`, matches no Kubernetes resource and is exempt);
- a MutatingPolicy: admission and mutateExisting may not both be disabled (it would never run);
- a namespaced policy: no `globalContext` and no `http` in any expression (Kyverno's default; its
  --allowHTTPInNamespacedPolicies has no counterpart here).
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from webhook.cel.source import root_identifiers, tokenize
from webhook.families.cel.base import enabled
from webhook.families.cel.scope import CompileFailed

# where a CEL policy keeps expressions: (list field, the expression fields of each item)
_EXPRESSION_FIELDS = (("variables", ("expression",)), ("matchConditions", ("expression",)),
                      ("validations", ("expression", "messageExpression")), ("auditAnnotations", ("valueExpression",)),
                      ("generate", ("expression",)))
_FORBIDDEN_IN_NAMESPACED = (("globalContext", "globalContext.* is not allowed in namespaced policies"),
                            ("http", "http.* is not allowed in namespaced policies"))


def check_kyverno_spec(kind: str, namespaced: bool, spec: Mapping[str, Any]) -> None:
    """Raises CompileFailed for what Kyverno's policy validation refuses. `kind` without `Namespaced`."""
    json_payloads = (spec.get("evaluation") or {}).get("mode") == "JSON"
    if not json_payloads and not ((spec.get("matchConstraints") or {}).get("resourceRules")):
        raise CompileFailed("spec.matchConstraints", "a matchConstraints with at least one resource rule is required")
    if kind == "MutatingPolicy" and not enabled(spec, "evaluation", "admission", "enabled") \
            and not enabled(spec, "evaluation", "mutateExisting", "enabled", default=False):
        raise CompileFailed("spec.evaluation", "disabling both admission and mutateExisting evaluation modes is not "
                            "allowed")
    if namespaced:
        names = frozenset().union(*(_roots(text) for text in _expressions(spec)))
        for name, message in _FORBIDDEN_IN_NAMESPACED:
            if name in names:
                raise CompileFailed("spec", message)


def _roots(text: str) -> frozenset[str]:
    try:
        return root_identifiers(tokenize(text))
    except ValueError:  # not CEL: the expression's own compile says so
        return frozenset()


def _expressions(spec: Mapping[str, Any]) -> Iterator[str]:
    for list_field, keys in _EXPRESSION_FIELDS:
        for item in spec.get(list_field) or ():
            if isinstance(item, Mapping):
                yield from (item[k] for k in keys if isinstance(item.get(k), str))
    for mutation in spec.get("mutations") or ():
        for holder in ("applyConfiguration", "jsonPatch"):
            patch = mutation.get(holder) if isinstance(mutation, Mapping) else None
            if isinstance(patch, Mapping) and isinstance(patch.get("expression"), str):
                yield patch["expression"]
