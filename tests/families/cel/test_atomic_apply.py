"""A MutatingAdmissionPolicy's ApplyConfiguration may not set an atomic list (the API server refuses it: the items
left out would silently go); keyed lists and sets merge. tests/cluster/test_map_oracle.py compares with the API
server."""

from __future__ import annotations

from webhook.families.cel.applyconfig import atomic_lists


def test_atomic_lists_are_named() -> None:
    config = {"metadata": {"finalizers": ["a"], "labels": {"x": "y"}},
              "spec": {"tolerations": [{"key": "gpu"}],
                       "containers": [{"name": "app", "args": ["--x"], "env": [{"name": "A"}],
                                       "ports": [{"containerPort": 80}], "volumeMounts": [{"mountPath": "/d"}]}]}}
    assert atomic_lists(config) == [".spec.tolerations", ".spec.containers.args"]


def test_keyed_lists_alone_are_fine() -> None:
    assert atomic_lists({"spec": {"containers": [{"name": "app", "securityContext": {"privileged": False}}]}}) == []
