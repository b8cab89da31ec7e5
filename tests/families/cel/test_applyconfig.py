import jsonpatch
import pytest

from webhook.families.cel.applyconfig import PatchError, apply_patch, merge
from webhook.model import patch as diff

POD = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "1"}},
    "spec": {"containers": [{"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]},
                            {"name": "side", "image": "busybox"}],
             "tolerations": [{"key": "x", "operator": "Exists"}]},
}


def test_maps_merge_and_named_lists_merge_by_key():
    out = merge(POD, {"metadata": {"labels": {"b": "2"}},
                      "spec": {"containers": [{"name": "side", "resources": {"limits": {"cpu": "1"}}},
                                              {"name": "new", "image": "alpine"}]}})
    assert out["metadata"]["labels"] == {"a": "1", "b": "2"}
    assert [c["name"] for c in out["spec"]["containers"]] == ["app", "side", "new"]
    assert out["spec"]["containers"][1] == {"name": "side", "image": "busybox", "resources": {"limits": {"cpu": "1"}}}
    assert POD["spec"]["containers"][1] == {"name": "side", "image": "busybox"}  # input untouched


def test_atomic_lists_are_replaced_and_null_removes():
    out = merge(POD, {"spec": {"tolerations": [{"key": "y", "operator": "Exists"}]}, "metadata": {"labels": None}})
    assert out["spec"]["tolerations"] == [{"key": "y", "operator": "Exists"}]
    assert "labels" not in out["metadata"]


def test_container_ports_merge_by_port_and_protocol():
    out = merge(POD, {"spec": {"containers": [{"name": "app", "ports": [{"containerPort": 80, "name": "http"},
                                                                        {"containerPort": 443}]}]}})
    assert out["spec"]["containers"][0]["ports"] == [{"containerPort": 80, "name": "http"}, {"containerPort": 443}]


def test_json_patch_ops_and_the_engine_diff_applies_with_jsonpatch():
    out = apply_patch(POD, [{"op": "add", "path": "/metadata/labels/team", "value": "ml"},
                            {"op": "replace", "path": "/spec/containers/0/image", "value": "nginx:1.27"},
                            {"op": "remove", "path": "/spec/tolerations"},
                            {"op": "add", "path": "/spec/containers/-", "value": {"name": "z", "image": "z"}}])
    assert out["metadata"]["labels"]["team"] == "ml" and "tolerations" not in out["spec"]
    ops = diff.diff(POD, out)
    assert jsonpatch.apply_patch(POD, ops) == out


@pytest.mark.parametrize("ops", [[{"op": "remove", "path": "/nope"}], [{"op": "add", "path": "/a/b", "value": 1}],
                                 [{"op": "test", "path": "/kind", "value": "Service"}], "x"])
def test_bad_patches_fail(ops):
    with pytest.raises(PatchError):
        apply_patch(POD, ops)
