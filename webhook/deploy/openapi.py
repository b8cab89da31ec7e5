"""JSON Schema 2020-12 (a policy kind's schema) to a structural OpenAPI v3 schema (a CRD's openAPIV3Schema).

The webhook's loader stays the authority on what a policy means; the CRD lets `kubectl apply` refuse
a bad policy early. So the conversion keeps every check the API server can express the same way,
and where it cannot, it loosens (the API server accepts, the loader still refuses) and says so in
`Conversion.loosened`. It never makes the CRD stricter than the loader. Keywords it does not know
raise `SchemaConversionError`, so a new schema construct is decided on, not silently dropped.

Structural-schema rules (Kubernetes apiextensions v1) honoured here: a non-empty `type` on every
node except `x-kubernetes-int-or-string` / `x-kubernetes-preserve-unknown-fields` ones; no `const`,
`$schema`, `$ref`, type lists, numeric `exclusiveMinimum`, `additionalProperties: false`, or
`properties` next to an `additionalProperties` schema; inside `anyOf`/`oneOf`/`allOf`/`not` only
value validations (no type, description, default, additionalProperties, nullable), and only fields
the enclosing node also declares.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from webhook.model.quickinit import frozen_dataclass

ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "examples", "deprecated", "readOnly", "writeOnly", "default", "title"})
VALUE_KEYWORDS = frozenset({"enum", "pattern", "minLength", "maxLength", "minimum", "maximum", "multipleOf",
                            "minItems", "maxItems", "minProperties", "maxProperties", "required", "format"})
COMBINATORS = ("anyOf", "oneOf", "allOf")
LOOSENED_DROPS = frozenset({"propertyNames", "dependentRequired", "dependentSchemas", "if", "then", "else",
                            "contains", "minContains", "maxContains", "prefixItems", "unevaluatedProperties",
                            "unevaluatedItems", "patternProperties"})
# formats the API server knows (k8s.io/apiextensions-apiserver/pkg/apiserver/validation/formats.go)
K8S_FORMATS = frozenset({"bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid", "uuid3",
                         "uuid4", "uuid5", "isbn", "isbn10", "isbn13", "creditcard", "ssn", "hexcolor", "rgbcolor",
                         "byte", "password", "date", "duration", "datetime", "date-time", "int32", "int64", "float",
                         "double"})
JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", dict: "object", list: "array"}
# RE2 (the API server's regexp engine) has no lookaround and no backreferences
NOT_RE2 = re.compile(r"\(\?[=!]|\(\?<[=!]|\(\?P=|\\[1-9]")
VALUE_FORBIDDEN = frozenset({"type", "description", "default", "additionalProperties", "nullable", "title"})


class SchemaConversionError(Exception):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or '<root>'}: {message}")
        self.path, self.message = path, message


@dataclass
class _Context:
    root: Mapping[str, Any]
    loosened: list[str] = field(default_factory=list)
    resolving: tuple[str, ...] = ()

    def loosen(self, path: str, what: str) -> None:
        self.loosened.append(f"{path or '<root>'}: {what}")


@frozen_dataclass
class Conversion:
    schema: dict[str, Any]
    loosened: tuple[str, ...]


def to_structural(schema: Mapping[str, Any]) -> Conversion:
    """The openAPIV3Schema of a CRD whose objects are the documents `schema` describes."""
    ctx = _Context(schema)
    converted = _node(schema, "", ctx)
    props = converted.get("properties", {})
    # the API server owns apiVersion, kind and metadata; a CRD may only say they are there
    for name, node in (("apiVersion", {"type": "string"}), ("kind", {"type": "string"}), ("metadata", {"type": "object"})):
        if name in props:
            props[name] = node
    if "required" in converted:
        converted["required"] = [r for r in converted["required"] if r not in ("apiVersion", "kind", "metadata")]
        if not converted["required"]:
            del converted["required"]
    converted.pop("x-kubernetes-preserve-unknown-fields", None)
    return Conversion(converted, tuple(ctx.loosened))


def _join(path: str, name: str | int) -> str:
    return f"{path}[{name}]" if isinstance(name, int) else (f"{path}.{name}" if path else str(name))


def _resolve(schema: Mapping[str, Any], path: str, ctx: _Context) -> Mapping[str, Any]:
    ref = schema["$ref"]
    if not isinstance(ref, str) or not ref.startswith("#/"):
        raise SchemaConversionError(path, f"only local $ref is supported, got {ref!r}")
    if ref in ctx.resolving:
        raise SchemaConversionError(path, f"recursive $ref {ref} cannot be a structural schema")
    target: Any = ctx.root
    for part in ref[2:].split("/"):
        target = target[part.replace("~1", "/").replace("~0", "~")]
    merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    ctx.resolving = (*ctx.resolving, ref)
    return merged


def _node(schema: Mapping[str, Any], path: str, ctx: _Context) -> dict[str, Any]:
    if not isinstance(schema, Mapping):
        raise SchemaConversionError(path, "boolean schemas are not supported")
    depth = len(ctx.resolving)
    if "$ref" in schema:
        schema = _resolve(schema, path, ctx)
    out: dict[str, Any] = {}
    try:
        _type(schema, path, ctx, out)
        for key, value in schema.items():
            _keyword(key, value, schema, path, ctx, out)
    finally:
        ctx.resolving = ctx.resolving[:depth]
    _combinators(schema, path, ctx, out)
    if out.get("type") == "object" and "properties" not in out and "additionalProperties" not in out \
            and not out.get("x-kubernetes-preserve-unknown-fields"):
        out["x-kubernetes-preserve-unknown-fields"] = True  # JSON Schema: an object of anything
    elif out.get("type") == "object" and "properties" in out and "additionalProperties" not in schema \
            and path != "metadata":
        out["x-kubernetes-preserve-unknown-fields"] = True
        ctx.loosen(path, "fields beyond the declared ones are accepted, as the JSON schema allows them")
    return out


def _value_validation(node: dict[str, Any]) -> dict[str, Any]:
    """Strip what a value validation (inside anyOf/oneOf/allOf/not) must not carry, at every depth."""
    out = {k: v for k, v in node.items() if k not in VALUE_FORBIDDEN and not k.startswith("x-kubernetes-")}
    if "properties" in out:
        out["properties"] = {name: _value_validation(sub) for name, sub in out["properties"].items()}
    if "items" in out:
        out["items"] = _value_validation(out["items"])
    for key in COMBINATORS:
        if key in out:
            out[key] = [_value_validation(sub) for sub in out[key]]
    if "not" in out:
        out["not"] = _value_validation(out["not"])
    return out


def _type(schema: Mapping[str, Any], path: str, ctx: _Context, out: dict[str, Any]) -> None:
    types = schema.get("type")
    if types is None and "const" in schema:
        types = JSON_TYPES.get(type(schema["const"]))
    if types is None:
        return
    types = [types] if isinstance(types, str) else list(types)
    if "null" in types:
        out["nullable"] = True
        types.remove("null")
    kinds = set(types)
    if kinds == {"number", "integer"}:
        kinds = {"number"}
    if len(kinds) == 1:
        out["type"] = kinds.pop()
    elif kinds == {"integer", "string"}:
        out["x-kubernetes-int-or-string"] = True
    elif kinds:
        out["x-kubernetes-preserve-unknown-fields"] = True
        ctx.loosen(path, f"any value is accepted (the webhook checks for {' or '.join(sorted(kinds))})")


def _keyword(key: str, value: Any, schema: Mapping[str, Any], path: str, ctx: _Context, out: dict[str, Any]) -> None:
    if key in ANNOTATIONS or key in ("type", "$defs", "definitions", "additionalProperties") or key in COMBINATORS \
            or key == "not":
        if key == "additionalProperties":
            _additional(value, schema, path, ctx, out)
        return
    if key == "description":
        out["description"] = value
    elif key == "const":
        out["enum"] = [copy.deepcopy(value)]
    elif key in VALUE_KEYWORDS:
        _value_keyword(key, value, path, ctx, out)
    elif key == "exclusiveMinimum" or key == "exclusiveMaximum":
        bound = "minimum" if key == "exclusiveMinimum" else "maximum"
        if isinstance(value, bool):
            out[key] = value
        else:
            out[bound], out[key] = value, True
    elif key == "properties":
        out["properties"] = {name: _node(sub, _join(path, name), ctx) for name, sub in value.items()}
    elif key == "items":
        _items(value, schema, path, ctx, out)
    elif key == "uniqueItems":
        _unique(value, schema, path, ctx, out)
    elif key in LOOSENED_DROPS:
        ctx.loosen(path, f"{key} is checked by the webhook only")
    elif key in ("nullable",) or key.startswith("x-kubernetes-"):
        out[key] = copy.deepcopy(value)
    else:
        raise SchemaConversionError(path, f"unsupported JSON Schema keyword {key!r}")


def _value_keyword(key: str, value: Any, path: str, ctx: _Context, out: dict[str, Any]) -> None:
    if key == "pattern" and NOT_RE2.search(value):
        raise SchemaConversionError(path, f"pattern {value!r} uses lookaround or backreferences, which RE2 lacks")
    if key == "format" and value not in K8S_FORMATS:
        ctx.loosen(path, f"format {value!r} is checked by the webhook only")
        return
    out[key] = copy.deepcopy(value)


def _additional(value: Any, schema: Mapping[str, Any], path: str, ctx: _Context, out: dict[str, Any]) -> None:
    if value is False:
        return  # unknown fields: pruned by the API server, refused by kubectl's strict field validation
    if value is True:
        out["x-kubernetes-preserve-unknown-fields"] = True
        return
    if "properties" in schema:
        raise SchemaConversionError(path, "properties together with an additionalProperties schema is not structural")
    out["additionalProperties"] = _node(value, _join(path, "*"), ctx)


def _items(value: Any, schema: Mapping[str, Any], path: str, ctx: _Context, out: dict[str, Any]) -> None:
    if not isinstance(value, Mapping):
        raise SchemaConversionError(path, "items must be one schema (use prefixItems for tuples)")
    out["items"] = _node(value, _join(path, "*"), ctx)


def _unique(value: Any, schema: Mapping[str, Any], path: str, ctx: _Context, out: dict[str, Any]) -> None:
    if not value:
        return
    item_type = (schema.get("items") or {}).get("type")
    if item_type in ("string", "integer", "number", "boolean"):
        out["x-kubernetes-list-type"] = "set"  # the API server refuses duplicates in a set
    else:
        ctx.loosen(path, "uniqueItems is checked by the webhook only")


def _combinators(schema: Mapping[str, Any], path: str, ctx: _Context, out: dict[str, Any]) -> None:
    for key in (*COMBINATORS, "not"):
        if key not in schema:
            continue
        branches = [schema[key]] if key == "not" else list(schema[key])
        _lift_common_type(branches, out)
        converted = []
        for index, branch in enumerate(branches):
            sub = _value_validation(_node(branch, f"{path}<{key}[{index}]>", ctx))
            if _projection_error(sub, out) or _needs_type(branch, out):
                ctx.loosen(path, f"{key} is checked by the webhook only")
                converted = []
                break
            converted.append(sub)
        if converted:
            out[key] = converted[0] if key == "not" else converted


def _lift_common_type(branches: list[Mapping[str, Any]], out: dict[str, Any]) -> None:
    """`anyOf: [{type: string, pattern: p}, {const: ""}]` -> `type: string, anyOf: [{pattern: p}, {enum: [""]}]`."""
    if "type" in out or out.get("x-kubernetes-int-or-string") or out.get("x-kubernetes-preserve-unknown-fields"):
        return
    kinds = set()
    for branch in branches:
        kind = branch.get("type")
        if kind is None and "const" in branch:
            kind = JSON_TYPES.get(type(branch["const"]))
        kinds.add(json.dumps(kind))
    only = json.loads(kinds.pop()) if len(kinds) == 1 else None
    if isinstance(only, str):
        out["type"] = only


def _needs_type(branch: Mapping[str, Any], out: Mapping[str, Any]) -> bool:
    kind = branch.get("type")
    return kind is not None and kind != out.get("type")


def _projection_error(sub: Mapping[str, Any], out: Mapping[str, Any]) -> bool:
    """A value validation may only constrain fields that the enclosing node declares."""
    inner = sub.get("properties") or {}
    outer = out.get("properties") or {}
    return any(name not in outer for name in inner) or ("items" in sub and "items" not in out)
