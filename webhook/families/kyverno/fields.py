"""The fields of Kyverno's ``kyverno.io/v1`` rule schema (api/kyverno/v1: Rule, Validation, Mutation, Generation,
MatchResources, ContextEntry, foreach), checked at load.

A field that is not in the schema is a load error naming the rule and the field (the API server's strict field
validation refuses it too; a typo such as ``validate.patern`` must not silently validate nothing). A field that
is in the schema but not implemented is refused by ``compile.py`` with the feature's name; everything else here
is honoured (docs/conformance.md, "Fields honoured / refused").
"""

from __future__ import annotations

from typing import Any, Mapping

RULE = {"name", "context", "reportProperties", "match", "exclude", "imageExtractors", "preconditions",
        "celPreconditions", "mutate", "validate", "generate", "verifyImages", "skipBackgroundRequests"}
VALIDATION = {"failureAction", "failureActionOverrides", "allowExistingViolations", "message", "manifests", "foreach",
              "pattern", "anyPattern", "deny", "podSecurity", "cel", "assert"}
MUTATION = {"mutateExistingOnPolicyUpdate", "targets", "patchStrategicMerge", "patchesJson6902", "foreach"}
GENERATION = {"generateExisting", "synchronize", "orphanDownstreamOnPolicyDelete", "apiVersion", "kind", "name",
              "namespace", "uid", "data", "clone", "cloneList", "foreach"}
FOREACH_VALIDATION = {"list", "elementScope", "context", "preconditions", "pattern", "anyPattern", "deny", "foreach"}
FOREACH_MUTATION = {"list", "order", "context", "preconditions", "patchStrategicMerge", "patchesJson6902", "foreach"}
MATCH = {"any", "all", "resources", "subjects", "roles", "clusterRoles"}
FILTER = {"resources", "subjects", "roles", "clusterRoles"}
RESOURCES = {"kinds", "name", "names", "namespaces", "annotations", "selector", "namespaceSelector", "operations"}
CONTEXT = {"name", "configMap", "apiCall", "imageRegistry", "variable", "globalReference"}
CONTEXT_SOURCES = {
    "configMap": {"name", "namespace"},
    "apiCall": {"urlPath", "method", "data", "service", "default", "jmesPath"},
    "imageRegistry": {"reference", "jmesPath", "imageRegistryCredentials"},
    "variable": {"value", "jmesPath", "default"},
    "globalReference": {"name", "jmesPath"},
}
DENY = {"conditions"}


def unknown_fields(rule: Mapping[str, Any]) -> list[str]:
    """Dotted paths of every field the schema does not have."""
    found: list[str] = []
    _check(rule, RULE, "", found)
    for block in ("match", "exclude"):
        _match(rule.get(block), block, found)
    _context(rule.get("context"), "context", found)
    validate, mutate, generate = rule.get("validate"), rule.get("mutate"), rule.get("generate")
    if _check(validate, VALIDATION, "validate", found):
        _check(validate.get("deny"), DENY, "validate.deny", found)
        _foreach(validate.get("foreach"), FOREACH_VALIDATION, "validate.foreach", found)
    if _check(mutate, MUTATION, "mutate", found):
        _foreach(mutate.get("foreach"), FOREACH_MUTATION, "mutate.foreach", found)
    _check(generate, GENERATION, "generate", found)
    return found


def _check(value: Any, allowed: set[str], where: str, found: list[str]) -> bool:
    if not isinstance(value, Mapping):
        return False
    found.extend(f"{where}.{key}" if where else str(key) for key in value if key not in allowed)
    return True


def _match(block: Any, where: str, found: list[str]) -> None:
    if not _check(block, MATCH, where, found):
        return
    _check(block.get("resources"), RESOURCES, f"{where}.resources", found)
    for group in ("any", "all"):
        for index, entry in enumerate(block.get(group) or []):
            if _check(entry, FILTER, f"{where}.{group}[{index}]", found):
                _check(entry.get("resources"), RESOURCES, f"{where}.{group}[{index}].resources", found)


def _context(entries: Any, where: str, found: list[str]) -> None:
    for index, entry in enumerate(entries if isinstance(entries, list) else []):
        here = f"{where}[{index}]"
        if not _check(entry, CONTEXT, here, found):
            continue
        for source, fields in CONTEXT_SOURCES.items():
            _check(entry.get(source), fields, f"{here}.{source}", found)


def _foreach(entries: Any, allowed: set[str], where: str, found: list[str]) -> None:
    for index, entry in enumerate(entries if isinstance(entries, list) else []):
        here = f"{where}[{index}]"
        if not _check(entry, allowed, here, found):
            continue
        _context(entry.get("context"), f"{here}.context", found)
        if "deny" in allowed:
            _check(entry.get("deny"), DENY, f"{here}.deny", found)
        _foreach(entry.get("foreach"), allowed, f"{here}.foreach", found)
