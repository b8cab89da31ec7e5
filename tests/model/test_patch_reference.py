"""diff() gives exactly the patch of the reference implementation (the one before copy-on-write
shortcuts), op for op and in order, whether the mutated object shares parts with the original or not."""

from __future__ import annotations

import copy
from typing import Any

import orjson
from hypothesis import given, settings, strategies as st

from webhook.model.patch import diff


# --- the reference, as it was -----------------------------------------------------------------------
def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def reference_diff(original: Any, mutated: Any, path: str = "") -> list[dict[str, Any]]:
    if _identical(original, mutated):
        return []
    if isinstance(original, dict) and isinstance(mutated, dict):
        ops: list[dict[str, Any]] = []
        for key in original:
            if key not in mutated:
                ops.append({"op": "remove", "path": f"{path}/{_escape(key)}"})
        for key, value in mutated.items():
            child = f"{path}/{_escape(key)}"
            if key not in original:
                ops.append({"op": "add", "path": child, "value": value})
            else:
                ops.extend(reference_diff(original[key], value, child))
        return ops
    if isinstance(original, list) and isinstance(mutated, list):
        if len(mutated) >= len(original) and all(_same(a, b) for a, b in zip(original, mutated)):
            return [{"op": "add", "path": f"{path}/-", "value": v} for v in mutated[len(original):]]
        if len(mutated) == len(original):
            ops = []
            for i, (a, b) in enumerate(zip(original, mutated)):
                ops.extend(reference_diff(a, b, f"{path}/{i}"))
            return ops
        return [{"op": "replace", "path": path, "value": mutated}]
    if _same(original, mutated):
        return []
    if path == "":
        return [{"op": "replace", "path": "", "value": mutated}]
    return [{"op": "replace", "path": path, "value": mutated}]


def _identical(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b) or type(a) not in (dict, list) or a != b:
        return False
    try:
        return orjson.dumps(a) == orjson.dumps(b)
    except TypeError:
        return False


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


# --- random documents and copy-on-write edits of them -------------------------------------------------
KEYS = st.sampled_from(["a", "b", "nvidia.com/gpu", "x~y", "", "c/d~e", "spec", "0"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.0, 1.0, 1.5]),
                    st.sampled_from(["", "x", "1", "a/b"]))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(KEYS, inner, max_size=4)), max_leaves=25)


def _edit(value: Any, choices: Any) -> Any:
    """A mutated version sharing what it does not touch (as the batteries build theirs)."""
    action = choices.draw(st.integers(0, 6))
    if isinstance(value, dict):
        out = dict(value)
        if action == 0 and out:
            out.pop(choices.draw(st.sampled_from(sorted(out))))
        elif action == 1:
            out[choices.draw(KEYS)] = choices.draw(JSON)
        elif action in (2, 3) and out:
            key = choices.draw(st.sampled_from(sorted(out)))
            out[key] = _edit(out[key], choices)
        elif action == 4:
            return copy.deepcopy(value)  # equal, not shared
        return out
    if isinstance(value, list):
        out = list(value)
        if action == 0 and out:
            out.pop(choices.draw(st.integers(0, len(out) - 1)))
        elif action == 1:
            out.append(choices.draw(JSON))
        elif action in (2, 3) and out:
            index = choices.draw(st.integers(0, len(out) - 1))
            out[index] = _edit(out[index], choices)
        elif action == 4:
            out.insert(0, choices.draw(JSON))
        return out
    return choices.draw(JSON) if action < 3 else value


@settings(max_examples=1000)
@given(JSON, st.data())
def test_diff_is_the_reference_diff(original: Any, data: Any) -> None:
    mutated = _edit(original, data)
    for _ in range(data.draw(st.integers(0, 3))):
        mutated = _edit(mutated, data)
    assert orjson.dumps(diff(original, mutated)) == orjson.dumps(reference_diff(original, mutated))
    assert orjson.dumps(diff(original, copy.deepcopy(mutated))) == orjson.dumps(reference_diff(original, mutated))


def test_a_key_that_is_no_text_fails_as_before() -> None:
    import pytest

    shared = {"x": 1}
    with pytest.raises(AttributeError):
        reference_diff({1: shared, "a": 1}, {1: shared, "a": 2})
    with pytest.raises(AttributeError):
        diff({1: shared, "a": 1}, {1: shared, "a": 2})


def test_shared_list_elements_with_nan_as_before() -> None:
    """The shared-prefix shortcut leaves lists holding a float to the element-wise check (NaN != NaN)."""
    nan = float("nan")
    for original in ([nan], [nan, 1], [1.0, nan], [{"a": nan}], [[nan]], ["x", {"b": [nan]}]):
        for mutated in (original, list(original), original + [2], original + [nan]):
            assert orjson.dumps(diff(original, mutated)) == orjson.dumps(reference_diff(original, mutated))
            assert orjson.dumps(diff({"l": original}, {"l": mutated})) == \
                orjson.dumps(reference_diff({"l": original}, {"l": mutated}))
