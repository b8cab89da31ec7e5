"""patchStrategicMerge with anchors and patchesJson6902, checked against JSON patches built with `jsonpatch`."""

import copy

import jsonpatch

from webhook.families.kyverno.mutate_strategic import apply_strategic_merge
from webhook.families.kyverno.patches6902 import apply_patches, parse_patches

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "p", "labels": {"app": "a"}},
       "spec": {"containers": [{"name": "c", "image": "nginx:latest"}, {"name": "d", "image": "redis:7"}]}}


def _roundtrip(original, patched):
    """The JSON patch from original to patched, applied with the jsonpatch library, gives patched back."""
    patch = jsonpatch.make_patch(original, patched)
    assert jsonpatch.apply_patch(copy.deepcopy(original), patch) == patched
    return patch


def test_add_if_absent_keeps_existing_values():
    out = apply_strategic_merge(POD, {"metadata": {"labels": {"+(app)": "b", "+(team)": "t"}}})
    assert out["metadata"]["labels"] == {"app": "a", "team": "t"}
    assert [op["path"] for op in _roundtrip(POD, out)] == ["/metadata/labels/team"]


def test_conditional_anchor_in_list_patches_matching_elements_by_name():
    out = apply_strategic_merge(POD, {"spec": {"containers": [{"(image)": "*:latest", "imagePullPolicy": "Always"}]}})
    assert out["spec"]["containers"][0] == {"name": "c", "image": "nginx:latest", "imagePullPolicy": "Always"}
    assert "imagePullPolicy" not in out["spec"]["containers"][1]
    _roundtrip(POD, out)


def test_top_level_condition_that_fails_changes_nothing():
    assert apply_strategic_merge(POD, {"metadata": {"labels": {"(app)": "zzz"}}, "spec": {"x": 1}}) == POD


def test_merge_keys_and_new_elements_first_as_kustomize_does():
    out = apply_strategic_merge(POD, {"spec": {"containers": [{"name": "sidecar", "image": "envoy"},
                                                              {"name": "d", "image": "redis:8"}]}})
    assert [c["name"] for c in out["spec"]["containers"]] == ["sidecar", "c", "d"]
    assert out["spec"]["containers"][2]["image"] == "redis:8"


def test_null_deletes_and_delete_directive_removes_element():
    out = apply_strategic_merge(POD, {"metadata": {"labels": None},
                                      "spec": {"containers": [{"name": "d", "$patch": "delete"}]}})
    assert "labels" not in out["metadata"] and [c["name"] for c in out["spec"]["containers"]] == ["c"]


def test_json6902_with_kyverno_options():
    ops = parse_patches("""
- op: add
  path: /spec/containers/0/env/-
  value: {name: A, value: "1"}
- op: remove
  path: /metadata/annotations/missing
- op: replace
  path: /spec/containers/-1/image
  value: redis:8
""")
    out = apply_patches(POD, ops)
    assert out["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]
    assert out["spec"]["containers"][1]["image"] == "redis:8"
    assert POD["spec"]["containers"][1]["image"] == "redis:7"  # the input is never changed
    _roundtrip(POD, out)
