import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.model.patch import diff, escape, pointer
from tests.support import apply_patch


def test_escape_rfc6901():
    assert escape("nvidia.com/gpu") == "nvidia.com~1gpu"
    assert escape("a~b/c") == "a~0b~1c"
    assert pointer("spec", "containers", 0, "resources", "limits", "nvidia.com/gpu") == \
        "/spec/containers/0/resources/limits/nvidia.com~1gpu"


def test_remove_key_with_slash():
    original = {"spec": {"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "1"}}}]}}
    mutated = copy.deepcopy(original)
    del mutated["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]
    ops = diff(original, mutated)
    assert ops == [{"op": "remove", "path": "/spec/containers/0/resources/limits/nvidia.com~1gpu"}]
    assert apply_patch(original, ops) == mutated


def test_append_and_replace_lists():
    original = {"a": [1, 2], "b": [1, 2, 3]}
    mutated = {"a": [1, 2, 3], "b": [3, 1]}
    ops = diff(original, mutated)
    assert {"op": "add", "path": "/a/-", "value": 3} in ops
    assert apply_patch(original, ops) == mutated


def test_no_change_no_ops():
    doc = {"a": {"b": [1, {"c": True}]}}
    assert diff(doc, copy.deepcopy(doc)) == []


def test_bool_and_int_differ():
    ops = diff({"a": 1}, {"a": True})
    assert ops == [{"op": "replace", "path": "/a", "value": True}]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(alphabet="ab/~c", max_size=3), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(alphabet="ab/~", max_size=3), json_values, max_size=4),
       st.dictionaries(st.text(alphabet="ab/~", max_size=3), json_values, max_size=4))
def test_diff_always_applies(original, mutated):
    assert apply_patch(original, diff(original, mutated)) == mutated
