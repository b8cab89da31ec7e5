"""Every policy kind's JSON schema is itself a valid 2020-12 schema.

The loader no longer checks schemas at start-up (it cost every `apply` ~0.1 s), so this test is where a
broken schema is caught: with `check_schema`, a typo such as `"type": "strin"` fails here, not silently
accepts every document.
"""

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from webhook.app import build_registry

KINDS = [(family.name, kind) for family in build_registry().families for kind in family.kinds if kind.schema is not None]


def test_every_kind_of_every_family_has_a_schema():
    """Issue 43.1: a kind without a schema ignored unknown fields (`validationFailureActon` left a policy in Audit)."""
    every = [(family.name, kind) for family in build_registry().families for kind in family.kinds]
    assert [f"{kind.api_version} {kind.kind}" for _, kind in every if kind.schema is None] == []
    assert {name for name, _ in KINDS} >= {"platform", "cel", "kyverno"}


@pytest.mark.parametrize("family, kind", KINDS, ids=[f"{f}:{k.api_version}/{k.kind}" for f, k in KINDS])
def test_schema_is_valid(family, kind):
    Draft202012Validator.check_schema(kind.schema)


def test_a_broken_schema_is_caught():
    with pytest.raises(SchemaError):
        Draft202012Validator.check_schema({"type": "object", "properties": {"x": {"type": "strin"}}})
