"""--state reads YAML and JSON (`kubectl get -o json`) alike; a seed keeps no managedFields."""

import json

import yaml

from webhook.state import packed
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


def test_equal_parts_of_seeded_objects_are_one_object_but_metadata_never(tmp_path, monkeypatch):
    monkeypatch.setattr(packed, "ENABLED", False)  # packed pods share nothing: they are text
    second = json.loads(json.dumps(POD))
    second["metadata"]["name"] = "nb-1"
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "jdoe"}}
    profile = {"apiVersion": "kubeflow.org/v1", "kind": "Profile", "metadata": {"name": "jdoe"}}
    (tmp_path / "s.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                                 "items": [POD, second, namespace, profile]}))
    state = InMemoryClusterState.from_directory(tmp_path)
    a, b = state.get("Pod", "jdoe", "nb-0"), state.get("Pod", "jdoe", "nb-1")
    assert a["spec"] is b["spec"] and a["metadata"]["labels"] is b["metadata"]["labels"]
    ns, prof = state.get("Namespace", "", "jdoe"), state.get("Profile", "", "jdoe")
    assert ns["metadata"] is not prof["metadata"]
    assert ns["metadata"]["uid"] != prof["metadata"]["uid"]
    assert ns["metadata"]["resourceVersion"] != prof["metadata"]["resourceVersion"]


def test_a_large_state_is_parsed_in_a_child_process_with_the_same_result_and_errors(tmp_path, monkeypatch):
    import pytest

    from webhook.state import memory

    (tmp_path / "pods.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [POD]}))
    direct = stored(InMemoryClusterState.from_directory(tmp_path))
    monkeypatch.setattr(memory, "FORK_ABOVE", 0)
    assert stored(InMemoryClusterState.from_directory(tmp_path)) == direct
    (tmp_path / "bad.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {}\n")
    with pytest.raises(memory.StateSeedError, match="every object needs kind and metadata.name"):
        InMemoryClusterState.from_directory(tmp_path)


def test_the_parsing_child_ends_even_when_the_parent_ignores_sigterm(tmp_path):
    """An event loop may leave a handler for SIGTERM behind (uvloop does after it closes); the child that
    parses a large state inherits it and must still end when the pool is done with it."""
    import subprocess
    import sys

    (tmp_path / "pods.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [POD]}))
    program = ("import signal, sys\n"
               "from pathlib import Path\n"
               "from webhook.state import memory\n"
               "signal.signal(signal.SIGTERM, lambda *_: None)\n"
               "memory.FORK_ABOVE = 0\n"
               "state = memory.InMemoryClusterState.from_directory(Path(sys.argv[1]))\n"
               "print(len(state.list('Pod')))\n")
    done = subprocess.run([sys.executable, "-c", program, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "1", done.stderr


def test_seeded_pods_are_kept_packed_and_read_as_the_reference_reads_them(tmp_path, monkeypatch):
    second = json.loads(json.dumps(POD))
    second["metadata"]["name"] = "nb-1"
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "jdoe"}}
    (tmp_path / "s.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [POD, second, namespace]}))
    state = InMemoryClusterState.from_directory(tmp_path)
    assert all(type(v) is bytes for v in state._scopes[("Pod", "jdoe")].values())
    assert type(state._scopes[("Namespace", "")]["jdoe"]) is dict  # other kinds stay decoded
    monkeypatch.setattr(packed, "ENABLED", False)
    reference = InMemoryClusterState.from_directory(tmp_path)
    assert all(type(v) is dict for v in reference._scopes[("Pod", "jdoe")].values())

    def without_uid(obj):
        return {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "uid"}}
    assert [without_uid(p) for p in state.list("Pod", "jdoe")] == [without_uid(p) for p in reference.list("Pod", "jdoe")]
    assert without_uid(state.get("Pod", "jdoe", "nb-1")) == without_uid(reference.get("Pod", "jdoe", "nb-1"))
    # a read is a private copy: editing it changes nothing stored
    state.get("Pod", "jdoe", "nb-0")["spec"]["containers"].clear()
    assert state.get("Pod", "jdoe", "nb-0")["spec"]["containers"]
    # deleted as any object is, listeners told with the object
    seen = []
    state.add_listener(lambda kind, event, obj: seen.append((event, obj["metadata"]["name"])))
    state.record_deleted("Pod", "jdoe", "nb-1", force=True)
    assert seen == [("DELETED", "nb-1")] and state.get("Pod", "jdoe", "nb-1") is None
