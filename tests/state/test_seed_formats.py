"""--state reads YAML and JSON (`kubectl get -o json`) alike; a seed keeps no managedFields."""

import json

import yaml

from webhook.state.memory import InMemoryClusterState

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {
    "name": "nb-0", "namespace": "jdoe", "labels": {"notebook-name": "nb"},
    "managedFields": [{"manager": "kubelet", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {}}]},
    "spec": {"containers": [{"name": "nb", "image": "jupyter:1", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}


def stored(state):
    pod = dict(state.get("Pod", "jdoe", "nb-0"))
    meta = {k: v for k, v in pod.pop("metadata").items() if k not in ("uid", "resourceVersion", "creationTimestamp")}
    return pod, meta


def test_json_list_json_in_yaml_and_yaml_load_the_same(tmp_path):
    listing = {"apiVersion": "v1", "kind": "List", "items": [POD]}
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "pods.json").write_text(json.dumps(listing, indent=2))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "pods.yaml").write_text(json.dumps(listing))
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "pods.yaml").write_text(yaml.safe_dump(POD))
    states = [InMemoryClusterState.from_directory(tmp_path / d) for d in "abc"]
    assert stored(states[0]) == stored(states[1]) == stored(states[2])
    pod, meta = stored(states[0])
    assert "managedFields" not in meta and pod["spec"] == POD["spec"]


def test_a_yaml_file_that_only_looks_like_json_is_read_as_yaml(tmp_path):
    (tmp_path / "flow.yaml").write_text("{apiVersion: v1, kind: Namespace, metadata: {name: jdoe}}\n")
    assert InMemoryClusterState.from_directory(tmp_path).get("Namespace", "", "jdoe") is not None
