"""The depth check's fast paths agree with the recursive walk they replaced.

- `_too_deep` (level by level) == the recursive reference, on random trees around the limit;
- `shallow_body` never says "shallow" for a body whose objects the walk refuses, and parse_review's
  answers (accepted, or the same MalformedReview message) do not depend on it.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.model.boundedjson import MAX_DEPTH, _too_deep, shallow_body
from webhook.model.errors import MalformedReview
from webhook.model.review import parse_review
from tests.kinds import pod
from tests.support import review, source_module


def _reference(node: Any, levels_left: int) -> bool:
    """The recursive walk as it was."""
    if levels_left == 0:
        return True
    for child in node.values() if isinstance(node, dict) else node:
        if isinstance(child, (dict, list)) and _reference(child, levels_left - 1):
            return True
    return False


def _tree(rng: random.Random, depth: int, budget: list[int]) -> Any:
    """A random JSON tree; one branch may go `depth` levels down."""
    budget[0] -= 1
    if depth == 0 or budget[0] <= 0:
        return rng.choice([1, "x", None, True, 2.5, {}, []])
    width = rng.randint(1, 4)
    children = [_tree(rng, depth - 1 if i == 0 else rng.randint(0, depth - 1), budget) for i in range(width)]
    if rng.random() < 0.5:
        return children
    return {f"k{i}": child for i, child in enumerate(children)}


def _chain(depth: int, leaf: Any = 1, noise: str = "{[[") -> Any:
    node = leaf
    for i in range(depth):
        node = [node] if i % 2 else {"a": node, "b": noise}
    return node


@pytest.mark.parametrize("seed", range(300))
def test_level_walk_matches_recursive_walk(seed):
    rng = random.Random(seed)
    depth = rng.choice([0, 1, 2, 5, 20, MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 3])
    tree = {"spec": _tree(rng, depth, [400])}
    for levels in (0, 1, 3, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1):
        assert _too_deep(tree, levels) == _reference(tree, levels), (seed, levels)


@pytest.mark.parametrize("depth", [MAX_DEPTH - 3, MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1])
@pytest.mark.parametrize("leaf", [1, {}, []])
def test_level_walk_matches_recursive_walk_on_chains(depth, leaf):
    obj = {"spec": _chain(depth, leaf)}
    for levels in (MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1):
        assert _too_deep(obj, levels) == _reference(obj, levels)


def _answer(raw: bytes | str, parse: Any = parse_review) -> str:
    try:
        req = parse(raw)
    except MalformedReview as exc:
        return f"malformed: {exc}"
    return f"ok: {json.dumps(req.object, sort_keys=True)}"


def _bodies() -> list[bytes | str]:
    rng = random.Random(7)
    out: list[bytes | str] = []
    for depth in range(MAX_DEPTH - 6, MAX_DEPTH + 4):
        for leaf in (1, {}, []):
            doc = review(pod())
            doc["request"]["object"]["spec"]["deep"] = _chain(depth, leaf)
            raw = json.dumps(doc).encode()
            out += [raw, raw.decode(), raw.decode().encode("utf-16"), raw.decode().encode("utf-32")]
    for seed in range(60):
        doc = review(pod(), operation="UPDATE", old=pod())
        doc["request"]["object"]["spec"]["x"] = _tree(rng, rng.choice([3, 30, MAX_DEPTH, MAX_DEPTH + 2]), [120])
        doc["request"]["oldObject"]["spec"]["x"] = _tree(rng, rng.choice([3, MAX_DEPTH - 1, MAX_DEPTH + 1]), [120])
        out.append(json.dumps(doc).encode())
    for depth in range(MAX_DEPTH - 12, MAX_DEPTH + 2):  # few brackets besides the chain: counts near the bound
        for leaf in (1, {}, []):
            doc = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                   "request": {"uid": "u", "kind": {"group": "example.com", "version": "v1", "kind": "Widget"},
                               "operation": "CREATE", "namespace": "n", "name": "w",
                               "object": {"kind": "Widget", "spec": {"x": _chain(depth, leaf, "")}}}}
            out.append(json.dumps(doc).encode())
    return out


def test_shallow_body_is_never_wrong():
    assert sum(shallow_body(raw) for raw in _bodies()) > 20
    for raw in _bodies():
        if shallow_body(raw):
            doc = json.loads(raw)
            for key in ("object", "oldObject"):
                obj = doc["request"].get(key)
                assert obj is None or not _reference(obj, MAX_DEPTH)


def test_parse_review_answers_do_not_depend_on_the_shortcut():
    fast = [_answer(raw) for raw in _bodies()]
    # the module's source without the shortcut (patched into a copy: the module itself may run compiled)
    walked = source_module("webhook.model.review")
    walked.shallow_body = lambda body: False
    assert [_answer(raw, walked.parse_review) for raw in _bodies()] == fast
    assert any(a.startswith("malformed: request.object is nested deeper") for a in fast)
    assert any(a.startswith("ok") for a in fast)


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=400) | st.text(alphabet="{[]}\"a:,", max_size=300).map(str.encode))
def test_shallow_body_counts_the_brackets_of_bytes_and_bytearrays_alike(raw):
    """One translate() pass counts what the two count() calls counted: '{' and '[' bytes, whatever the rest."""
    expected = raw.count(b"{") + raw.count(b"[") <= MAX_DEPTH
    assert shallow_body(raw) is expected and shallow_body(bytearray(raw)) is expected
    assert shallow_body(raw.decode("latin-1")) is expected  # the text branch counts the same characters
    brackets = raw.count(b"{") + raw.count(b"[")
    if brackets <= MAX_DEPTH:  # just at the limit, then one past it
        at_limit = raw + b"{" * (MAX_DEPTH - brackets)
        assert shallow_body(at_limit) and not shallow_body(at_limit + b"[")
