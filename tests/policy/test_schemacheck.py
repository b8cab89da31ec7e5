"""The fast schema check (webhook/policy/schemacheck.py) agrees with jsonschema, which explains violations.

Its contract is one-sided (True must mean jsonschema finds no error), but it is written to agree both ways;
these tests hold it to that over every platform policy file of the repository and thousands of mutations of
them (a field dropped, retyped, emptied, an unknown field added), and over small schemas of each keyword.
"""

from __future__ import annotations

import copy
import math
import random
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from jsonschema import Draft202012Validator

from webhook.app import build_registry
from webhook.policy.loader import PolicyLoader
from webhook.policy.documents import read_documents
from webhook.policy.schemacheck import compile_check
from tests.support import REPO

REGISTRY = build_registry()
SCHEMAS = {kind.key: kind.schema for kind in REGISTRY.kinds() if kind.schema is not None}
REPLACEMENTS: list[Any] = [None, True, False, 0, 1, -1, 2.5, 1.0, float("nan"), "", "x", "nvidia.com/gpu", "A" * 300,
                           [], ["x"], [{}], {}, {"x": 1}, {"name": "x"}]


def _policy_documents() -> list[dict[str, Any]]:
    found = []
    for path in sorted(REPO.glob("**/*.yaml")):
        if ".venv" in path.parts or "node_modules" in path.parts:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if "quartermaster.dev/v1alpha1" not in text:
            continue
        try:
            docs = list(yaml.safe_load_all(text))
        except yaml.YAMLError:
            continue
        found += [d for d in docs if isinstance(d, dict) and (d.get("apiVersion"), d.get("kind")) in SCHEMAS]
    return found


DOCUMENTS = _policy_documents()


def _paths(value: Any, path: tuple = ()) -> Iterator[tuple]:
    yield path
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, path + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, path + (index,))


def _mutations(doc: dict[str, Any], rng: random.Random) -> Iterator[dict[str, Any]]:
    for path in list(_paths(doc))[1:]:
        *parent_path, last = path
        for _ in range(3):
            mutated = copy.deepcopy(doc)
            parent = mutated
            for step in parent_path:
                parent = parent[step]
            choice = rng.random()
            if choice < 0.2 and isinstance(parent, dict):
                del parent[last]
            elif choice < 0.3 and isinstance(parent[last], dict):
                parent[last]["unknownField"] = "x"
            elif choice < 0.35 and isinstance(parent[last], list) and parent[last]:
                parent[last].append(copy.deepcopy(parent[last][0]))
            else:
                parent[last] = copy.deepcopy(rng.choice(REPLACEMENTS))
            yield mutated


def _agrees(schema: Any, check: Any, doc: Any) -> None:
    expected = not any(True for _ in Draft202012Validator(schema).iter_errors(doc))
    assert check(doc) == expected, doc


def test_every_platform_schema_has_a_fast_check():
    assert len(SCHEMAS) >= 4
    for key, schema in SCHEMAS.items():
        assert compile_check(schema) is not None, key


def test_the_repository_policies_are_found_and_valid():
    assert len(DOCUMENTS) >= 8
    kinds = {d["kind"] for d in DOCUMENTS}
    assert {"DeviceClaimRewrite", "NotebookInjection", "ProfileQuota", "QueueAssignment"} <= kinds
    for doc in DOCUMENTS:
        assert compile_check(SCHEMAS[doc["apiVersion"], doc["kind"]])(doc)


def test_agrees_with_jsonschema_on_mutated_policies():
    rng = random.Random(12)
    checks = {key: compile_check(schema) for key, schema in SCHEMAS.items()}
    validators = {key: Draft202012Validator(schema) for key, schema in SCHEMAS.items()}
    seen = {True: 0, False: 0}
    for doc in DOCUMENTS:
        key = (doc["apiVersion"], doc["kind"])
        for mutated in _mutations(doc, rng):
            expected = not any(True for _ in validators[key].iter_errors(mutated))
            assert checks[key](mutated) == expected, mutated
            seen[expected] += 1
    assert seen[True] > 300 and seen[False] > 1000, seen  # both answers, many times each


@pytest.mark.parametrize("schema, values", [
    ({"type": "integer"}, [1, 1.0, 1.5, True, "1", None]),
    ({"type": "number"}, [1, 1.5, True, "1", math.inf]),
    ({"type": ["string", "null"]}, ["", None, 0, []]),
    ({"type": "boolean"}, [True, 0, "true"]),
    ({"enum": ["a", "b"]}, ["a", "c", 1, None, ["a"]]),
    ({"const": ""}, ["", " ", 0, False, None]),
    ({"pattern": "^a+$"}, ["aa", "ab", 3, None]),
    ({"minLength": 2, "maxLength": 3}, ["a", "ab", "abcd", 12345, ["a"]]),
    ({"minItems": 1, "maxItems": 2}, [[], [1], [1, 2, 3], "abc"]),
    ({"minProperties": 1, "maxProperties": 1}, [{}, {"a": 1}, {"a": 1, "b": 2}, []]),
    ({"minimum": 0, "maximum": 10}, [-1, 0, 10, 11, 5.5, True, math.nan, "5"]),
    ({"exclusiveMinimum": 0}, [0, 0.1, -1, math.nan, None]),
    ({"required": ["a"]}, [{"a": 1}, {}, [], "a"]),
    ({"properties": {"a": {"type": "string"}}, "additionalProperties": False}, [{"a": "x"}, {"a": 1}, {"b": 1}, {1: 2}, []]),
    ({"properties": {"a": True}, "additionalProperties": {"type": "integer"}}, [{"a": "x", "b": 1}, {"b": "x"}, {}]),
    ({"items": {"type": "string"}}, [[], ["a"], ["a", 1], {"a": 1}]),
    ({"propertyNames": {"pattern": "^[a-z]+$"}}, [{"ab": 1}, {"Ab": 1}, {1: 1}, "x"]),
    ({"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}, [{"a": 1}, {"a": 1, "b": 2}, {}, "x"]),
    ({"anyOf": [{"type": "integer"}, {"const": "y"}]}, ["x", "y", 1, 2.5]),
    ({"allOf": [{"type": "string"}, {"minLength": 1}]}, ["x", "", 1]),
    (True, [1, None]),
    ({"not": {"type": "string"}}, ["x"]),  # a keyword left to jsonschema: no fast check
])
def test_keywords_agree_with_jsonschema(schema, values):
    check = compile_check(schema)
    if isinstance(schema, dict) and "not" in schema:
        assert check is None
        return
    assert check is not None
    for value in values:
        _agrees(schema, check, value)


@pytest.mark.parametrize("schema", [{"enum": [1, "a"]}, {"const": 1}, {"type": "strin"}, {"$ref": "#/x"},
                                    {"patternProperties": {"a": True}, "additionalProperties": False}, {"format": "uri"}])
def test_what_it_does_not_implement_goes_to_jsonschema(schema):
    assert compile_check(schema) is None


def test_a_violation_is_still_explained_by_jsonschema(tmp_path: Path):
    path = tmp_path / "quota.yaml"
    text = (REPO / "policies" / "profile-quota.yaml").read_text()
    path.write_text(text.replace("spec:", "spec:\n  unknownField: 1", 1))
    doc = next(iter(read_documents(path)))
    error = PolicyLoader(REGISTRY, None).check_document(doc)  # type: ignore[arg-type]
    assert error is not None and "unknown field 'unknownField'" in error.message and error.field == "spec.unknownField"
