"""A yes/no check of a document against a policy kind's JSON Schema, built once per schema, for the
common case: a valid document.

jsonschema (~35 ms to import, a third of `quartermaster apply`'s start) is what explains a violation:
the loader asks it only when this check says no, so every error keeps jsonschema's exact wording and
path. This check implements, with Draft 2020-12's semantics as jsonschema 4 has them, only the keywords
the platform schemas use; a schema with any other keyword gets no check (None) and goes to jsonschema
for every document. "Valid" here must mean jsonschema finds no error (tests/policy/test_schemacheck.py
compares the two over mutated documents); "invalid" only costs the slow path.
"""

from __future__ import annotations

import numbers
import re
from typing import Any, Callable, Mapping

Check = Callable[[Any], bool]

# annotations: jsonschema ignores them when validating
_IGNORED = frozenset({"$schema", "$id", "$comment", "title", "description", "default", "examples", "deprecated",
                      "readOnly", "writeOnly"})


class _Unsupported(Exception):
    pass


def _is_integer(value: Any) -> bool:  # jsonschema's draft 6+ "integer": 1.0 is one, True is not
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, numbers.Number)


_TYPES: dict[str, Check] = {
    "array": lambda v: isinstance(v, list),
    "boolean": lambda v: isinstance(v, bool),
    "integer": _is_integer,
    "null": lambda v: v is None,
    "number": _is_number,
    "object": lambda v: isinstance(v, dict),
    "string": lambda v: isinstance(v, str),
}


def compile_check(schema: Any) -> Check | None:
    """True only for documents jsonschema's Draft202012Validator(schema) finds no error in; None when the
    schema uses a keyword implemented only there."""
    try:
        return _compile(schema)
    except _Unsupported:
        return None


def _compile(schema: Any) -> Check:
    if schema is True:
        return lambda _: True
    if schema is False:
        return lambda _: False
    if not isinstance(schema, dict):
        raise _Unsupported(schema)
    checks: list[Check] = []
    for keyword, value in schema.items():
        if keyword in _IGNORED:
            continue
        build = _KEYWORDS.get(keyword)
        if build is None:
            raise _Unsupported(keyword)
        check = build(value, schema)
        if check is not None:
            checks.append(check)
    if len(checks) == 1:
        return checks[0]
    return lambda value: all(check(value) for check in checks)


def _type(types: Any, _: Mapping[str, Any]) -> Check:
    names = [types] if isinstance(types, str) else types
    if not isinstance(names, list) or not all(isinstance(n, str) and n in _TYPES for n in names):
        raise _Unsupported(types)
    tests = [_TYPES[n] for n in names]
    return lambda value: any(test(value) for test in tests)


def _strings(values: Any) -> frozenset[str]:
    """enum/const of strings only: jsonschema's equality is Python's for them (no 1 == True, 1 == 1.0)."""
    if not isinstance(values, list) or not all(type(v) is str for v in values):
        raise _Unsupported(values)
    return frozenset(values)


def _enum(values: Any, _: Mapping[str, Any]) -> Check:
    allowed = _strings(values)
    return lambda value: isinstance(value, str) and value in allowed


def _const(value: Any, _: Mapping[str, Any]) -> Check:
    allowed = _strings([value])
    return lambda v: isinstance(v, str) and v in allowed


def _count(value: Any) -> int:
    if type(value) is not int:
        raise _Unsupported(value)
    return value


def _bound(value: Any) -> int | float:
    if type(value) not in (int, float):
        raise _Unsupported(value)
    return value


def _pattern(pattern: Any, _: Mapping[str, Any]) -> Check:
    if not isinstance(pattern, str):
        raise _Unsupported(pattern)
    search = re.compile(pattern).search  # jsonschema: re.search(pattern, instance), the same cached pattern
    return lambda value: not isinstance(value, str) or search(value) is not None


def _size(json_type: type, at_least: bool) -> Callable[[Any, Mapping[str, Any]], Check]:
    """minLength/maxLength, minItems/maxItems, minProperties/maxProperties: a bound on the size of one
    JSON type; other types pass, as in jsonschema."""
    def build(limit: Any, _: Mapping[str, Any]) -> Check:
        n = _count(limit)
        if at_least:
            return lambda value: not isinstance(value, json_type) or len(value) >= n
        return lambda value: not isinstance(value, json_type) or len(value) <= n
    return build


def _minimum(limit: Any, _: Mapping[str, Any]) -> Check:
    n = _bound(limit)
    return lambda value: not _is_number(value) or not value < n  # as jsonschema words it: NaN passes


def _maximum(limit: Any, _: Mapping[str, Any]) -> Check:
    n = _bound(limit)
    return lambda value: not _is_number(value) or not value > n


def _exclusive_minimum(limit: Any, _: Mapping[str, Any]) -> Check:
    n = _bound(limit)
    return lambda value: not _is_number(value) or not value <= n


def _required(names: Any, _: Mapping[str, Any]) -> Check:
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise _Unsupported(names)
    return lambda value: not isinstance(value, dict) or all(name in value for name in names)


def _properties(properties: Any, _: Mapping[str, Any]) -> Check:
    if not isinstance(properties, dict):
        raise _Unsupported(properties)
    checks = [(name, _compile(sub)) for name, sub in properties.items()]

    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return True
        return all(check_(value[name]) for name, check_ in checks if name in value)
    return check


def _additional_properties(additional: Any, schema: Mapping[str, Any]) -> Check:
    if "patternProperties" in schema:
        raise _Unsupported("patternProperties")
    known = schema.get("properties", {})
    if not isinstance(known, dict):
        raise _Unsupported(known)
    if additional is True:
        return lambda _: True
    if additional is False:
        return lambda value: not isinstance(value, dict) or all(key in known for key in value)
    extra = _compile(additional)
    return lambda value: not isinstance(value, dict) or all(extra(v) for k, v in value.items() if k not in known)


def _items(items: Any, schema: Mapping[str, Any]) -> Check:
    if "prefixItems" in schema:
        raise _Unsupported("prefixItems")
    each = _compile(items)
    return lambda value: not isinstance(value, list) or all(each(item) for item in value)


def _property_names(names: Any, _: Mapping[str, Any]) -> Check:
    each = _compile(names)
    return lambda value: not isinstance(value, dict) or all(each(key) for key in value)


def _subschemas(schemas: Any) -> list[Check]:
    if not isinstance(schemas, list) or not schemas:
        raise _Unsupported(schemas)
    return [_compile(s) for s in schemas]


def _any_of(schemas: Any, _: Mapping[str, Any]) -> Check:
    checks = _subschemas(schemas)
    return lambda value: any(check(value) for check in checks)


def _one_of(schemas: Any, _: Mapping[str, Any]) -> Check:
    checks = _subschemas(schemas)
    return lambda value: sum(1 for check in checks if check(value)) == 1


def _all_of(schemas: Any, _: Mapping[str, Any]) -> Check:
    checks = _subschemas(schemas)
    return lambda value: all(check(value) for check in checks)


_KEYWORDS: dict[str, Callable[[Any, Mapping[str, Any]], Check | None]] = {
    "type": _type, "enum": _enum, "const": _const, "pattern": _pattern,
    "minLength": _size(str, True), "maxLength": _size(str, False), "minItems": _size(list, True),
    "maxItems": _size(list, False), "minProperties": _size(dict, True), "maxProperties": _size(dict, False),
    "minimum": _minimum, "maximum": _maximum, "exclusiveMinimum": _exclusive_minimum,
    "required": _required, "properties": _properties, "additionalProperties": _additional_properties,
    "items": _items, "propertyNames": _property_names, "anyOf": _any_of, "oneOf": _one_of, "allOf": _all_of,
}
