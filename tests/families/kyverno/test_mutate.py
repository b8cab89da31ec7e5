"""patchStrategicMerge with anchors and patchesJson6902, checked against JSON patches built with `jsonpatch`."""

import copy

import jsonpatch
import pytest

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


def test_a_rule_on_a_large_object_copies_only_what_it_patches():
    """A rule's mutation ran on the event loop with two copy.deepcopy walks of the whole object (a 1.5 MB pod:
    ~400 ms a policy, 9 deep copies), then with one JSON copy; a per-container foreach made that copy once per
    container. Now the strategic merge copies on write: the maps and lists on the patch's paths are new, the
    rest is shared with the input, which is never edited."""
    from webhook.families.kyverno.mutate import apply_mutation

    containers = [{"name": f"c{i}", "image": "busybox", "env": [{"name": f"E{j}", "value": "x"} for j in range(1000)]}
                  for i in range(20)]
    big = {**POD, "spec": {"containers": containers, "volumes": [{"name": "v", "emptyDir": {}}]}}
    before = copy.deepcopy(big)
    patch = {"patchStrategicMerge": {"metadata": {"annotations": {"+(safe-to-evict)": "true"}}}}
    out = apply_mutation(big, patch["patchStrategicMerge"])
    assert out["metadata"]["annotations"] == {"safe-to-evict": "true"} and "annotations" not in big["metadata"]
    assert out["spec"] is big["spec"] and out["metadata"] is not big["metadata"]

    one = {"patchStrategicMerge": {"spec": {"containers": [{"(name)": "c7", "imagePullPolicy": "Always"}]}}}
    out = apply_mutation(big, one["patchStrategicMerge"])
    assert out["spec"]["containers"][7] == {**containers[7], "imagePullPolicy": "Always"}
    assert all(a is b for i, (a, b) in enumerate(zip(out["spec"]["containers"], containers)) if i != 7)
    assert out["spec"]["containers"][7]["env"] is containers[7]["env"] and out["spec"]["volumes"] is big["spec"]["volumes"]
    assert big == before  # the input, its lists and maps, as they were
    assert apply_mutation(big) == big and apply_mutation(big) is not big


LITERAL_CONDITION_ITEMS = [
    {"name": "web", "image": "nginx"}, {"name": "side", "image": "envoy"}, {"image": "nginx"}, "text", 7, None,
    {"name": 7, "image": "nginx"}, {"name": True, "image": "nginx"}, {"name": "web", "image": "nginx:1.25"},
    {"name": "WEB", "image": "nginx"}, {"name": "web ", "image": "nginx"},
]


@pytest.mark.parametrize("element", [
    {"(name)": "web", "imagePullPolicy": "Always"},
    {"(name)": "web", "(image)": "nginx", "imagePullPolicy": "Always"},
    {"(name)": "web", "(image)": "nginx:*", "imagePullPolicy": "Always"},
    {"(name)": "web", "securityContext": {"+(runAsNonRoot)": True}},
    {"+(imagePullPolicy)": "Always", "(name)": "web"},
    {"(name)": "web", "env": [{"(name)": "A", "value": "b"}]},
    {"(name)": "true", "imagePullPolicy": "Always"},  # a boolean true reads as the text "true"
])
def test_literal_conditions_skip_the_items_the_walk_skips(element, monkeypatch):
    """`(key): text` conditions on list elements are decided without the walk where they fail (a foreach
    patch names each container: n elements x n containers): the same patch as the walk makes, for items
    that lack the key, hold other text, hold a value of another type, or are no map."""
    from webhook.families.kyverno import mutate_strategic

    def patched():
        out = []
        for item in LITERAL_CONDITION_ITEMS:
            resource = {"spec": {"containers": [item, {"name": "other", "image": "busybox"}]}}
            out.append(apply_strategic_merge(resource, {"spec": {"containers": [copy.deepcopy(element)]}}))
        return out

    fast = patched()
    monkeypatch.setattr(mutate_strategic, "_literal_conditions", lambda _: None)
    assert fast == patched()


def test_literal_conditions_are_only_taken_where_they_decide_alone():
    from webhook.families.kyverno.mutate_strategic import _literal_conditions

    assert _literal_conditions({"(name)": "web", "image": "x"}) == (("name", "web"),)
    for element in ({"(name)": "web*"}, {"(name)": "1Gi"}, {"<(name)": "web"}, {"+(name)": "web"},
                    {"(name)": {"a": "b"}}, {"name": "web"}, {"(name)": "web", "(ports)": [1]}):
        assert _literal_conditions(element) is None, element
