from pathlib import Path

from webhook.testsuite.compare import fixup_generate_labels, same_resource
from webhook.testsuite.load import discover, read_objects, read_suites

SUITE = """\
apiVersion: cli.kyverno.io/v1alpha1
kind: Test
metadata:
  name: demo
policies: [policy.yaml]
resources: [resources.yaml, resources.yaml]
variables: values.yaml
results:
- policy: demo
  kind: Pod
  resources: [bad, ns1/good]
  result: fail
  isMUtatingPolicy: true
  patchedResources: patched.yaml
"""
OLD = """\
name: old
policies: [policy.yaml]
resources: [resources.yaml]
results:
- policy: demo
  rule: r
  resource: bad
  namespace: default
  status: pass
  patchedResource: patched.yaml
"""


def _write(tmp: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_suites_are_found_recursively_and_parsed_case_insensitively(tmp_path):
    _write(tmp_path, {
        "a/.kyverno-test/kyverno-test.yaml": SUITE,
        "a/.kyverno-test/values.yaml": "apiVersion: cli.kyverno.io/v1alpha1\nkind: Value\nnamespaces:\n"
                                       "- apiVersion: v1\n  kind: namespace\n  metadata: {name: ns1, labels: {x: y}}\n"
                                       "globalValues: {request.operation: UPDATE}\n",
        "a/.kyverno-test/resources.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\n---\n"
                                          "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns1}\n",
        "b/kyverno-test.yaml": OLD,
    })
    found = discover([str(tmp_path)])
    assert [p.relative_to(tmp_path).as_posix() for p in found] == ["a/.kyverno-test/kyverno-test.yaml", "b/kyverno-test.yaml"]
    suite = read_suites(found[0])[0]
    result = suite.results[0]
    assert (result.policy, result.resources, result.result, result.patched_resource) == ("demo", ("bad", "ns1/good"), "fail", "patched.yaml")
    assert result.flags == {"isMutatingPolicy"}
    assert suite.values.operation == "UPDATE"
    assert suite.values.namespace("ns1")["metadata"]["labels"] == {"x": "y"}
    assert suite.resources == ("resources.yaml",)
    objects = read_objects(suite, suite.resources, "resources")
    assert objects[0]["metadata"]["namespace"] == "default"  # namespaced kinds default to `default`
    assert "namespace" not in objects[1]["metadata"]  # a Namespace is cluster-scoped
    old = read_suites(found[1])[0]
    assert (old.name, old.results[0].resources, old.results[0].result, old.results[0].patched_resource) == \
        ("old", ("default/bad",), "pass", "patched.yaml")


def test_broken_suite_is_one_suite_with_an_error(tmp_path):
    _write(tmp_path, {"kyverno-test.yaml": "results: [\n"})
    suites = read_suites(tmp_path / "kyverno-test.yaml")
    assert len(suites) == 1 and "invalid YAML" in suites[0].error


def test_comparison_tidies_and_compares_numbers_by_value():
    assert same_resource({"a": 1, "b": {}, "c": [], "d": None, "e": [{"x": 1.0}]}, {"a": 1.0, "e": [{"x": 1}]})
    assert not same_resource({"a": True}, {"a": 1})
    assert not same_resource({"a": [1, 2]}, {"a": [2, 1]})
    labelled = {"metadata": {"labels": {"generate.kyverno.io/policy-name": "p", "app": "x"}}}
    assert same_resource(fixup_generate_labels(labelled), fixup_generate_labels({"metadata": {"labels": {"app": "x"}}}))
