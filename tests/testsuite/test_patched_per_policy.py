"""`patchedResources` as `kyverno test` compares it: the object as mutated up to the row's policy (policies one
after the other), and for MutatingPolicies, which Kyverno applies together, after all of them."""

import json
from pathlib import Path

import yaml

from webhook.cli import main


def _label_policy(kind: str, name: str, label: str) -> dict:
    if kind == "ClusterPolicy":
        return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": name},
                "spec": {"rules": [{"name": "label", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                                    "mutate": {"patchStrategicMerge": {"metadata": {"labels": {label: "yes"}}}}}]}}
    return {"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": name},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                             "operations": ["CREATE"], "resources": ["pods"]}]},
                     "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                         "expression": f'Object{{metadata: Object.metadata{{labels: {{"{label}": "yes"}}}}}}'}}]}}


def _pod(*labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web", **{k: "yes" for k in labels}}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def _run_suite(tmp: Path, capsys, policies: list[dict], expected: dict[str, tuple[str, ...]]) -> str:
    tmp.mkdir()
    (tmp / "policies.yaml").write_text(yaml.safe_dump_all(policies))
    (tmp / "resource.yaml").write_text(yaml.safe_dump(_pod()))
    results = []
    for policy, labels in expected.items():
        (tmp / f"{policy}.yaml").write_text(yaml.safe_dump(_pod(*labels)))
        results.append({"policy": policy, "kind": "Pod", "resources": ["web"], "result": "pass",
                        "patchedResources": f"{policy}.yaml"})
    (tmp / "kyverno-test.yaml").write_text(json.dumps({
        "apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Test", "metadata": {"name": "t"},
        "policies": ["policies.yaml"], "resources": ["resource.yaml"], "results": results}))
    main(["test", str(tmp), "--detailed-results"])
    return capsys.readouterr().out


def test_each_policy_is_compared_with_the_object_as_it_left_it(tmp_path, capsys):
    out = _run_suite(tmp_path / "s", capsys, [_label_policy("ClusterPolicy", "first", "a"),
                                               _label_policy("ClusterPolicy", "second", "b")],
                     {"first": ("a",), "second": ("a", "b")})
    assert out.rstrip().splitlines()[-1] == "2 passed, 0 failed", out


def test_mutating_policies_are_compared_after_all_of_them(tmp_path, capsys):
    out = _run_suite(tmp_path / "s", capsys, [_label_policy("MutatingPolicy", "first", "a"),
                                               _label_policy("MutatingPolicy", "second", "b")],
                     {"first": ("a", "b"), "second": ("a", "b")})
    assert out.rstrip().splitlines()[-1] == "2 passed, 0 failed", out
