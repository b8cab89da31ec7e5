"""Every policy document is held to its publisher's schema (issue 43.1): a misspelt field is an error with the
file, the line and the field, in the loader and so in `validate`, `apply`, `test` and `serve`, where the API
server would refuse the same object at `kubectl apply`. Before, unknown fields of Kyverno and CEL policies were
ignored: `validationFailureActon: Enforce` left the policy in Audit, `matchConstraint` matched nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kinds import pod
from tests.support import eventually, policy_dir, review, running_server
from webhook.app import PolicyLoadFailed, build_registry
from webhook.cel import CelCompiler
from webhook.cli import main
from webhook.policy.loader import PolicyLoader

CLUSTER_POLICY = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-team
spec:
  {spec_field}: {spec_value}
  rules:
  - name: has-team
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: label team is required
      pattern:
        metadata:
          labels:
            team: "?*"
"""

VALIDATING_POLICY = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: require-team
spec:
  validationActions: [Deny]
  {match}:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  {validations}:
  - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
    message: label team is required
"""

VAP = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: require-team
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  validations:
  - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
    {message}: "'label team is required'"
"""

MAP_V1 = """\
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: add-team
spec:
  policyName: add-team
  matchResources: {}
  validationActions: [Deny]
"""

# (file text, the misspelt field's path, its line) as a user would write them
MISSPELT = {
    "validationFailureActon": (CLUSTER_POLICY.format(spec_field="validationFailureActon", spec_value="Enforce"),
                               "spec.validationFailureActon", 6),
    "backgroud": (CLUSTER_POLICY.format(spec_field="backgroud", spec_value="false"), "spec.backgroud", 6),
    "matchConstraint": (VALIDATING_POLICY.format(match="matchConstraint", validations="validations"),
                        "spec.matchConstraint", 7),
    "validatons": (VALIDATING_POLICY.format(match="matchConstraints", validations="validatons"), "spec.validatons", 13),
    "mesageExpression": (VAP.format(message="mesageExpression"), "spec.validations[0].mesageExpression", 15),
    # a binding's field only MutatingAdmissionPolicy has not: the v1 kind is held to v1beta1's published schema
    "validationActions": (MAP_V1, "spec.validationActions", 8),
}
CORRECT = {
    "validationFailureActon": CLUSTER_POLICY.format(spec_field="validationFailureAction", spec_value="Enforce"),
    "backgroud": CLUSTER_POLICY.format(spec_field="background", spec_value="false"),
    "matchConstraint": VALIDATING_POLICY.format(match="matchConstraints", validations="validations"),
    "validatons": VALIDATING_POLICY.format(match="matchConstraints", validations="validations"),
    "mesageExpression": VAP.format(message="messageExpression"),
    "validationActions": MAP_V1.replace("  validationActions: [Deny]\n", ""),
}


def _load(directory: Path):
    return PolicyLoader(build_registry(), CelCompiler()).load(directory)


@pytest.mark.parametrize("name", sorted(MISSPELT))
def test_the_loader_refuses_a_misspelt_field_with_file_line_and_path(tmp_path, name):
    text, field, line = MISSPELT[name]
    assert text.splitlines()[line - 1].lstrip(" -").startswith(field.rsplit(".", 1)[-1] + ":")
    (tmp_path / "policy.yaml").write_text(text)
    result = _load(tmp_path)
    assert not result.ok
    (error,) = result.errors
    assert (error.file, error.document, error.line, error.field) == ("policy.yaml", 0, line, field)
    assert error.message.startswith(f"unknown field {field.rsplit('.', 1)[-1]!r}; allowed fields: ")


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_the_same_documents_spelt_right_load(tmp_path, name):
    (tmp_path / "policy.yaml").write_text(CORRECT[name])
    result = _load(tmp_path)
    assert result.ok, [str(e) for e in result.errors]


@pytest.mark.parametrize("name", sorted(MISSPELT))
def test_validate_reports_the_misspelt_field(tmp_path, name, capsys):
    text, field, line = MISSPELT[name]
    policies = policy_dir(tmp_path / "p", {"policy.yaml": text})
    assert main(["validate", str(policies)]) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"{policies / 'policy.yaml'}:{line}: document 0 field {field}: unknown field "), out


def test_apply_refuses_the_policies(tmp_path):
    text, field, line = MISSPELT["validationFailureActon"]
    policies = policy_dir(tmp_path / "p", {"policy.yaml": text})
    (tmp_path / "pod.yaml").write_text(json.dumps(pod()))
    run = subprocess.run([sys.executable, "-m", "webhook", "apply", "--policies", str(policies), str(tmp_path / "pod.yaml")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stdout == ""
    assert f"policy.yaml:{line}: document 0 field {field}: unknown field 'validationFailureActon'" in run.stderr


def test_a_test_suite_naming_the_policy_fails_and_says_why(tmp_path, capsys):
    text, field, line = MISSPELT["backgroud"]
    suite = policy_dir(tmp_path / "suite", {
        "policy.yaml": text,
        "pod.yaml": json.dumps(pod(labels={"team": "a"})),
        "kyverno-test.yaml": "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: t\n"
                             "policies: [policy.yaml]\nresources: [pod.yaml]\nresults:\n- policy: require-team\n"
                             "  rule: has-team\n  resources: [p]\n  kind: Pod\n  result: pass\n"})
    assert main(["test", str(suite)]) == 1
    out = capsys.readouterr().out
    assert f"policy.yaml:{line}: document 0 field {field}: unknown field" in out
    assert out.rstrip().endswith("0 passed, 1 failed")


async def test_serve_keeps_the_loaded_policies_when_a_reload_brings_a_misspelt_field(tmp_path):
    policies = policy_dir(tmp_path / "p", {"policy.yaml": CORRECT["matchConstraint"]})
    async with running_server(policies, tmp_path) as server:
        assert (await server.admit("/validate", review(pod())))["allowed"] is False
        text, field, line = MISSPELT["matchConstraint"]
        (policies / "policy.yaml").write_text(text)

        async def degraded():
            body = json.loads((await server.get("/readyz"))[1])
            return body if body["status"] == "degraded" else None

        body = await eventually(degraded, message="the misspelt reload was not refused")
        assert any(e.startswith(f"policy.yaml:{line}: document 0 field {field}: unknown field") for e in body["policyErrors"])
        # the policy loaded before still denies: a misspelling never turns it off
        assert (await server.admit("/validate", review(pod())))["allowed"] is False


async def test_serve_does_not_start_on_a_misspelt_field(tmp_path):
    text, field, line = MISSPELT["mesageExpression"]
    policies = policy_dir(tmp_path / "p", {"policy.yaml": text})
    with pytest.raises(PolicyLoadFailed) as refused:
        async with running_server(policies, tmp_path):
            pass
    assert str(refused.value).startswith(f"policy.yaml:{line}: document 0 field {field}: unknown field")
