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


def test_every_family_declares_schemas():
    assert {name for name, _ in KINDS} >= {"platform"}
    assert len(KINDS) >= 4


@pytest.mark.parametrize("family, kind", KINDS, ids=[f"{f}:{k.api_version}/{k.kind}" for f, k in KINDS])
def test_schema_is_valid(family, kind):
    Draft202012Validator.check_schema(kind.schema)


def test_a_broken_schema_is_caught():
    with pytest.raises(SchemaError):
        Draft202012Validator.check_schema({"type": "object", "properties": {"x": {"type": "strin"}}})
