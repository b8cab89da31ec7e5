"""Values `subresources` in `quartermaster test`: an object sent as its parent's subresource, as `kyverno test` does."""

import json

import yaml

from webhook.cli import main


def _run(capsys, path) -> tuple[int, str]:
    code = main(["test", str(path), "--detailed-results"])
    return code, capsys.readouterr().out


SCALE_POLICY = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: scale-limit}
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments/scale]}
  validations:
  - expression: "object.spec.replicas <= 5 && request.subResource == 'scale' && request.kind.kind == 'Deployment'"
    message: scale to 5 at most
"""


def test_values_subresources_send_an_object_as_its_parents_subresource(tmp_path, capsys):
    """A values `subresources` entry makes a Scale object a deployments/scale request, with the parent's kind."""
    suite = tmp_path / "s"
    suite.mkdir()
    (suite / "policy.yaml").write_text(SCALE_POLICY)
    scales = [{"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": n, "namespace": "default"},
               "spec": {"replicas": r}} for n, r in (("web", 3), ("batch", 8))]
    (suite / "resources.yaml").write_text(yaml.safe_dump_all(scales))
    (suite / "values.yaml").write_text(yaml.safe_dump({
        "apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Values", "subresources": [{
            "parentResource": {"group": "apps", "version": "v1", "kind": "Deployment", "name": "deployments"},
            "subresource": {"group": "autoscaling", "version": "v1", "kind": "Scale", "name": "deployments/scale"}}]}))
    (suite / "kyverno-test.yaml").write_text(json.dumps({
        "apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Test", "metadata": {"name": "scale"},
        "policies": ["policy.yaml"], "resources": ["resources.yaml"], "variables": "values.yaml",
        "results": [{"policy": "scale-limit", "kind": "Scale", "resources": ["web"], "result": "pass"},
                    {"policy": "scale-limit", "kind": "Scale", "resources": ["batch"], "result": "fail"}]}))
    code, out = _run(capsys, suite)
    assert out.rstrip().splitlines()[-1] == "2 passed, 0 failed", out
    assert "scale to 5 at most" in out
