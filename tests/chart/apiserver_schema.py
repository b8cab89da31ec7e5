"""Validate a custom object against a CRD's openAPIV3Schema the way the API server does, as far as the
chart's schemas need: OpenAPI v3.0 keywords (Draft 4 semantics: boolean exclusiveMinimum), nullable,
x-kubernetes-int-or-string, x-kubernetes-list-type: set, and strict field validation (`kubectl apply`
refuses unknown fields unless x-kubernetes-preserve-unknown-fields)."""

from __future__ import annotations

from typing import Any, Iterator, Mapping

import jsonschema
from jsonschema import validators


def _int_or_string(validator, value, instance, schema):
    if value and (isinstance(instance, bool) or not isinstance(instance, (int, str))):
        yield jsonschema.ValidationError(f"{instance!r} is neither an integer nor a string")


def _list_type(validator, value, instance, schema):
    if value == "set" and isinstance(instance, list) and len(instance) != len({repr(i) for i in instance}):
        yield jsonschema.ValidationError(f"{instance!r} has duplicates in a set")


def _type(validator, types, instance, schema):
    if instance is None and schema.get("nullable"):
        return
    yield from validators.Draft4Validator.VALIDATORS["type"](validator, types, instance, schema)


OpenApiValidator = validators.extend(validators.Draft4Validator, {
    "x-kubernetes-int-or-string": _int_or_string, "x-kubernetes-list-type": _list_type, "type": _type})


def _unknown_fields(schema: Mapping[str, Any], obj: Any, path: str) -> Iterator[str]:
    if isinstance(obj, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, value in obj.items():
            if props is not None and key in props:
                yield from _unknown_fields(props[key], value, f"{path}.{key}")
            elif isinstance(extra, Mapping):
                yield from _unknown_fields(extra, value, f"{path}.{key}")
            elif props is not None and not schema.get("x-kubernetes-preserve-unknown-fields"):
                yield f"{path}.{key}: unknown field"
    elif isinstance(obj, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(obj):
            yield from _unknown_fields(schema["items"], item, f"{path}[{index}]")


def crd_errors(crd: Mapping[str, Any], obj: Mapping[str, Any]) -> list[str]:
    """Why the API server would refuse `obj` under this CRD (empty: it would store it)."""
    version = obj["apiVersion"].rpartition("/")[2]
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    schema = served["schema"]["openAPIV3Schema"]
    errors = [f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
              for e in OpenApiValidator(schema).iter_errors(obj)]
    errors += list(_unknown_fields(schema, {k: v for k, v in obj.items() if k != "metadata"}, ""))
    if obj["apiVersion"] != f"{crd['spec']['group']}/{version}" or obj["kind"] != crd["spec"]["names"]["kind"]:
        errors.append("apiVersion/kind do not belong to this CRD")
    return errors
