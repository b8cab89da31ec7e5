"""The compiled shape checkers agree with the reference walk that names the field."""

from __future__ import annotations

import copy

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.model.shapes import _CHECKERS, SHAPES, _problem, shape_problem
from tests.support import REPO

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=3))
json_value = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.sampled_from(["name", "image", "limits", "requests", "spec", "containers", "resources", "x"]), inner, max_size=3),
    max_leaves=12)


def _paths(shape, prefix=()):
    """Every field path the shape names, so that tests can plant a wrong value at each one."""
    if isinstance(shape, list):
        yield prefix + (0,)
        yield from _paths(shape[0], prefix + (0,))
    elif isinstance(shape, dict):
        for key, sub in shape.items():
            if key != "*":
                yield prefix + (key,)
                yield from _paths(sub, prefix + (key,))


def _plant(obj, path, value):
    """obj with `value` at `path`, building the containers on the way."""
    node = obj
    for step, nxt in zip(path, path[1:]):
        if isinstance(step, int):
            while len(node) <= step:
                node.append([] if isinstance(nxt, int) else {})
            node = node[step]
        else:
            if not isinstance(node.get(step), (dict, list)):
                node[step] = [] if isinstance(nxt, int) else {}
            node = node[step]
    last = path[-1]
    if isinstance(last, int):
        while len(node) <= last:
            node.append(None)
    node[last] = value
    return obj


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(sorted(SHAPES)), value=json_value)
def test_checker_agrees_with_the_reference_on_random_values(kind, value):
    doc = value if isinstance(value, dict) else {"spec": value}
    assert _CHECKERS[kind](doc) == (_problem(doc, SHAPES[kind], "x") is None)


def test_every_field_with_a_wrong_type_is_found_and_named():
    pod = yaml.safe_load((REPO / "examples" / "notebook-pod.yaml").read_text())
    assert shape_problem("Pod", pod, "request.object") is None
    for kind, shape in SHAPES.items():
        for path in _paths(shape):
            for wrong in (["a"], {"a": 1}, "s", 7, True):
                doc = _plant({}, path, wrong)
                expected = _problem(doc, shape, "request.object")
                assert _CHECKERS[kind](doc) == (expected is None), (kind, path, wrong)
                assert shape_problem(kind, doc, "request.object") == expected


def test_a_wrong_quantity_deep_in_a_real_pod_is_named():
    pod = copy.deepcopy(yaml.safe_load((REPO / "examples" / "notebook-pod.yaml").read_text()))
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = [1]
    assert shape_problem("Pod", pod, "request.object") == \
        "request.object.spec.containers[0].resources.limits[nvidia.com/gpu] must be a scalar, got list"


def test_a_boolean_quantity_is_not_a_scalar_and_null_ones_are_absent():
    """Quantity maps are checked by the wildcard checker: bool is an int to isinstance, never a quantity here."""
    for limits, expected in (({"cpu": True}, "request.object.spec.containers[0].resources.limits[cpu] must be a "
                                             "scalar, got bool"),
                             ({"cpu": None, "memory": 1, "x": 1.5, "y": "1Gi"}, None)):
        pod = {"spec": {"containers": [{"name": "c", "resources": {"limits": limits}}]}}
        assert _CHECKERS["Pod"](pod) == (expected is None)
        assert shape_problem("Pod", pod, "request.object") == expected
