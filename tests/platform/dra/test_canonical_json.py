"""The claim template's name hashes exactly the text json.dumps(sort_keys=True, compact) gives, whichever
encoder wrote it."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings, strategies as st

from webhook.platform.dra.config import plain_json
from webhook.platform.dra.templates import canonical_json

TEXT = st.one_of(st.sampled_from(["", "gpu", "nvidia.com/gpu=1", "a\"b", "back\\slash", "tab\t", "del\x7f", "ü", "€",
                                  "device.attributes['gpu.nvidia.com'].profile == '1g.5gb'", "~/"]),
                 st.text(max_size=8))
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), TEXT, st.floats(allow_nan=True), st.sampled_from([1e16, 1e-5, 0.1]))
CONTENT = st.recursive(SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
                       max_leaves=12)


def _reference(content: Any) -> bytes:
    return json.dumps(content, sort_keys=True, separators=(",", ":")).encode()


@settings(max_examples=1000)
@given(st.dictionaries(TEXT, CONTENT, max_size=4))
def test_canonical_json_is_the_standard_encoders(content: dict[str, Any]) -> None:
    assert canonical_json(content) == _reference(content)
    if plain_json(content):
        assert canonical_json(content, plain=True) == _reference(content)


def test_what_is_plain() -> None:
    import datetime

    assert plain_json({"a": [1, "x", True, None, {"b": ()}]})
    assert not plain_json({"a": 1.0}) and not plain_json({"a": [datetime.date(2026, 1, 1)]}) and not plain_json({1: "a"})
