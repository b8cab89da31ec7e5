"""JSON Schema 2020-12 -> structural OpenAPI v3, keyword by keyword, and the structural check itself."""

import pytest

from tests.chart.apiserver_schema import crd_errors
from webhook.deploy.crds import crd_for, plural_of
from webhook.deploy.openapi import SchemaConversionError, to_structural
from webhook.deploy.structural import structural_problems
from webhook.policy.family import PolicyKind


def convert(spec_properties, **spec_extra):
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object", "additionalProperties": False, "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": "example.dev/v1"}, "kind": {"const": "Thing"},
            "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
            "spec": {"type": "object", "additionalProperties": False, "properties": spec_properties, **spec_extra},
        },
    }
    conversion = to_structural(schema)
    assert structural_problems(conversion.schema) == []
    return conversion


def spec_of(conversion):
    return conversion.schema["properties"]["spec"]["properties"]


def test_envelope():
    schema = convert({}).schema
    assert "$schema" not in schema and "additionalProperties" not in schema
    assert schema["properties"]["apiVersion"] == {"type": "string"}
    assert schema["properties"]["kind"] == {"type": "string"}
    assert schema["properties"]["metadata"] == {"type": "object"}
    assert schema["required"] == ["spec"]


def test_const_becomes_a_typed_enum():
    assert spec_of(convert({"v": {"const": "x"}}))["v"] == {"type": "string", "enum": ["x"]}
    assert spec_of(convert({"v": {"const": 3}}))["v"] == {"type": "integer", "enum": [3]}


def test_type_lists():
    props = spec_of(convert({"q": {"type": ["string", "integer"], "pattern": "^[0-9]+Gi$"},
                             "n": {"type": ["string", "null"]},
                             "f": {"type": ["number", "integer"]},
                             "any": {"type": ["string", "number"]}}))
    assert props["q"] == {"x-kubernetes-int-or-string": True, "pattern": "^[0-9]+Gi$"}
    assert props["n"] == {"nullable": True, "type": "string"}
    assert props["f"] == {"type": "number"}
    assert props["any"] == {"x-kubernetes-preserve-unknown-fields": True}


def test_loosening_is_reported():
    conversion = convert({"any": {"type": ["string", "number"]},
                          "labels": {"type": "object", "propertyNames": {"pattern": "^a"}, "additionalProperties": {"type": "string"}}})
    assert any(line.startswith("spec.any:") for line in conversion.loosened)
    assert any(line.startswith("spec.labels:") and "propertyNames" in line for line in conversion.loosened)
    assert "propertyNames" not in spec_of(conversion)["labels"]


def test_numeric_exclusive_bounds_become_booleans():
    props = spec_of(convert({"s": {"type": "number", "exclusiveMinimum": 0, "maximum": 10}}))
    assert props["s"] == {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 10}


def test_objects():
    props = spec_of(convert({
        "strict": {"type": "object", "additionalProperties": False, "properties": {"a": {"type": "string"}}},
        "map": {"type": "object", "additionalProperties": {"type": "integer"}},
        "free": {"type": "object"},
        "open": {"type": "object", "additionalProperties": True},
    }))
    assert props["strict"] == {"type": "object", "properties": {"a": {"type": "string"}}}
    assert props["map"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert props["free"]["x-kubernetes-preserve-unknown-fields"] is True
    assert props["open"]["x-kubernetes-preserve-unknown-fields"] is True


def test_combinators_become_value_validations():
    props = spec_of(convert({
        "env": {"anyOf": [{"type": "string", "pattern": "^[A-Z_]+$"}, {"const": ""}]},
        "item": {"type": "object", "additionalProperties": False,
                 "properties": {"name": {"type": "string"}, "prefix": {"type": "string"}},
                 "oneOf": [{"required": ["name"]}, {"required": ["prefix"]}]},
    }))
    assert props["env"] == {"type": "string", "anyOf": [{"pattern": "^[A-Z_]+$"}, {"enum": [""]}]}
    assert props["item"]["oneOf"] == [{"required": ["name"]}, {"required": ["prefix"]}]


def test_combinator_over_undeclared_fields_is_dropped_not_wrong():
    conversion = convert({"x": {"type": "object", "properties": {"a": {"type": "string"}},
                                "anyOf": [{"properties": {"b": {"const": 1}}}]}})
    assert "anyOf" not in spec_of(conversion)["x"]
    assert any("anyOf" in line for line in conversion.loosened)


def test_unique_scalar_items_become_a_set():
    props = spec_of(convert({"names": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}}))
    assert props["names"] == {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}


def test_local_refs_are_inlined():
    schema = {"type": "object", "$defs": {"name": {"type": "string", "minLength": 1}},
              "properties": {"spec": {"type": "object", "additionalProperties": False,
                                      "properties": {"a": {"$ref": "#/$defs/name"}}}}}
    converted = to_structural(schema).schema
    assert converted["properties"]["spec"]["properties"]["a"] == {"type": "string", "minLength": 1}
    assert "$defs" not in converted


@pytest.mark.parametrize("bad, message", [
    ({"a": {"type": "string", "pattern": "^(?!kube-).*$"}}, "RE2"),
    ({"a": {"type": "string", "contentEncoding": "base64"}}, "contentEncoding"),
    ({"a": {"type": "object", "properties": {"b": {"type": "string"}}, "additionalProperties": {"type": "string"}}},
     "not structural"),
    ({"a": {"$ref": "https://example.org/schema.json"}}, "local \\$ref"),
])
def test_unconvertible_schemas_are_errors(bad, message):
    with pytest.raises(SchemaConversionError, match=message):
        convert(bad)


def test_recursive_ref_is_an_error():
    schema = {"type": "object", "$defs": {"node": {"type": "object", "additionalProperties": False,
                                                   "properties": {"child": {"$ref": "#/$defs/node"}}}},
              "properties": {"spec": {"$ref": "#/$defs/node"}}}
    with pytest.raises(SchemaConversionError, match="recursive"):
        to_structural(schema)


@pytest.mark.parametrize("schema, problem", [
    ({"type": "object", "properties": {"a": {"description": "untyped"}}}, "no type"),
    ({"type": "object", "properties": {"a": {"type": "string", "const": "x"}}}, "'const'"),
    ({"type": "object", "additionalProperties": False, "properties": {"a": {"type": "string"}}}, "additionalProperties: false"),
    ({"type": "object", "properties": {"a": {"type": ["string", "integer"]}}}, "type must be"),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "anyOf": [{"properties": {"b": {"type": "string"}}}]},
     "not declared"),
    ({"type": "object", "properties": {"a": {"type": "string", "anyOf": [{"type": "string"}]}}}, "inside a value validation"),
    ({"type": "number", "exclusiveMinimum": 0}, "booleans"),
])
def test_structural_check_catches_violations(schema, problem):
    assert any(problem in p for p in structural_problems(schema)), structural_problems(schema)


def test_crd_for_a_kind_validates_its_documents():
    kind = PolicyKind("example.dev/v1", "GpuPolicy", {
        "type": "object", "additionalProperties": False, "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {"apiVersion": {"const": "example.dev/v1"}, "kind": {"const": "GpuPolicy"},
                       "metadata": {"type": "object"},
                       "spec": {"type": "object", "additionalProperties": False, "required": ["gpus"],
                                "properties": {"gpus": {"type": "integer", "minimum": 0},
                                               "mode": {"type": "string", "enum": ["Enforce", "Audit"]}}}}})
    crd = crd_for(kind).manifest
    assert crd["metadata"]["name"] == "gpupolicies.example.dev" and crd["spec"]["scope"] == "Cluster"
    good = {"apiVersion": "example.dev/v1", "kind": "GpuPolicy", "metadata": {"name": "g"}, "spec": {"gpus": 2}}
    assert crd_errors(crd, good) == []
    assert crd_errors(crd, {**good, "spec": {"gpus": -1}})
    assert crd_errors(crd, {**good, "spec": {}})
    assert crd_errors(crd, {**good, "spec": {"gpus": 1, "extra": True}})


def test_plurals():
    assert [plural_of(k) for k in ("ProfileQuota", "Policy", "Gateway", "Class", "Box")] == \
        ["profilequotas", "policies", "gateways", "classes", "boxes"]
