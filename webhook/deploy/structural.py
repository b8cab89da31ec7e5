"""Is this openAPIV3Schema structural, as the API server requires of an apiextensions.k8s.io/v1 CRD?

A second opinion on openapi.to_structural, written from the rules rather than from the converter:
https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#specifying-a-structural-schema
"""

from __future__ import annotations

from typing import Any, Mapping

TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean"})
ALLOWED = frozenset({
    "type", "format", "title", "description", "default", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "multipleOf", "enum", "maxProperties",
    "minProperties", "required", "items", "allOf", "oneOf", "anyOf", "not", "properties", "additionalProperties",
    "nullable", "example", "externalDocs",
})
KUBERNETES_EXTENSIONS = frozenset({
    "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource", "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys", "x-kubernetes-list-type", "x-kubernetes-map-type", "x-kubernetes-validations",
})
NOT_IN_VALUE_VALIDATION = frozenset({"type", "description", "default", "additionalProperties", "nullable", "title"})
COMBINATORS = ("allOf", "anyOf", "oneOf")


def structural_problems(schema: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    _check(schema, "", problems, root=True)
    return problems


def _check(node: Mapping[str, Any], path: str, problems: list[str], root: bool = False) -> None:
    where = path or "<root>"
    if not isinstance(node, Mapping):
        problems.append(f"{where}: a schema must be an object")
        return
    for key in node:
        if key not in ALLOWED and key not in KUBERNETES_EXTENSIONS:
            problems.append(f"{where}: {key!r} is not allowed in a CRD schema")
    typed = node.get("type")
    if typed is not None and (not isinstance(typed, str) or typed not in TYPES):
        problems.append(f"{where}: type must be one of {sorted(TYPES)}, got {typed!r}")
    untyped_ok = node.get("x-kubernetes-int-or-string") is True or node.get("x-kubernetes-preserve-unknown-fields") is True
    if typed is None and not untyped_ok:
        problems.append(f"{where}: no type (only int-or-string and preserve-unknown-fields nodes may omit it)")
    if node.get("x-kubernetes-preserve-unknown-fields") is False:
        problems.append(f"{where}: x-kubernetes-preserve-unknown-fields may only be true")
    if node.get("additionalProperties") is False:
        problems.append(f"{where}: additionalProperties: false is not allowed")
    if isinstance(node.get("additionalProperties"), Mapping) and "properties" in node:
        problems.append(f"{where}: properties and additionalProperties are mutually exclusive")
    if "exclusiveMinimum" in node and not isinstance(node["exclusiveMinimum"], bool) or \
            "exclusiveMaximum" in node and not isinstance(node["exclusiveMaximum"], bool):
        problems.append(f"{where}: exclusiveMinimum/exclusiveMaximum must be booleans in OpenAPI v3.0")
    if node.get("uniqueItems") is True:
        problems.append(f"{where}: uniqueItems: true is not allowed (use x-kubernetes-list-type: set)")
    if root:
        _check_root(node, problems)
    for name, sub in (node.get("properties") or {}).items():
        _check(sub, f"{path}.{name}" if path else name, problems)
    if isinstance(node.get("additionalProperties"), Mapping):
        _check(node["additionalProperties"], f"{path}.*", problems)
    if "items" in node:
        if isinstance(node["items"], Mapping):
            _check(node["items"], f"{path}[*]", problems)
        else:
            problems.append(f"{where}: items must be a single schema")
    for key in (*COMBINATORS, "not"):
        if key in node:
            branches = [node[key]] if key == "not" else list(node[key])
            for index, branch in enumerate(branches):
                _check_value_validation(branch, node, f"{where}.{key}[{index}]", problems)


def _check_root(node: Mapping[str, Any], problems: list[str]) -> None:
    if node.get("type") != "object":
        problems.append("<root>: type must be object")
    metadata = (node.get("properties") or {}).get("metadata")
    if metadata is not None and set((metadata.get("properties") or {})) - {"name", "generateName"}:
        problems.append("metadata: only name and generateName may be constrained")


def _check_value_validation(branch: Any, outer: Mapping[str, Any], where: str, problems: list[str]) -> None:
    if not isinstance(branch, Mapping):
        problems.append(f"{where}: a schema must be an object")
        return
    int_or_string = outer.get("x-kubernetes-int-or-string") is True and branch in ({"type": "integer"}, {"type": "string"})
    for key in branch:
        if (key in NOT_IN_VALUE_VALIDATION or key in KUBERNETES_EXTENSIONS) and not int_or_string:
            problems.append(f"{where}: {key!r} is not allowed inside a value validation")
    for name, sub in (branch.get("properties") or {}).items():
        declared = (outer.get("properties") or {}).get(name)
        if declared is None:
            problems.append(f"{where}.{name}: not declared outside the value validation")
        else:
            _check_value_validation(sub, declared, f"{where}.{name}", problems)
    if "items" in branch:
        if "items" not in outer:
            problems.append(f"{where}: items not declared outside the value validation")
        else:
            _check_value_validation(branch["items"], outer["items"], f"{where}[*]", problems)
