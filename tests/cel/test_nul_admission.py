"""A NUL in a pod cannot slip it past a policy: real AdmissionReviews over HTTPS to `serve`, and the offline
commands (`quartermaster apply`, `quartermaster test`), with policies as users write them.

Kubernetes accepts NUL in annotation values; the default CEL runtime used to read `ok\\u0000rm -rf` as `ok`
(tests/cel/test_runtime_nul.py), so these pods were admitted."""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.support import review, running_server
from webhook.cli import main

_POLICY = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: {name}
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [pods]
"""

NO_SHELL = _POLICY.format(name="no-shell-in-annotations") + """\
  variables:
  - name: annotations
    expression: "has(object.metadata.annotations) ? object.metadata.annotations : {}"
  validations:
  - expression: "variables.annotations.all(k, !variables.annotations[k].contains('rm -rf'))"
    message: annotation values must not hold shell commands
"""

TEAM_LABEL = _POLICY.format(name="require-team-label") + """\
  validations:
  - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
    message: pods need a team label
"""

# the same rule written with optionals, which the exact runtime lacks: a NUL makes it an error (failure
# policy Fail: denied), never a value read from a cut string
NO_SHELL_OPTIONAL = NO_SHELL.replace("no-shell-in-annotations", "no-shell-optional").replace(
    '"has(object.metadata.annotations) ? object.metadata.annotations : {}"',
    '"object.metadata.?annotations.orValue({})"')


def _pod(name: str, annotations: dict | None = None, labels: dict | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "team-a", "labels": labels or {"team": "a"},
                         **({"annotations": annotations} if annotations else {})},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}


def _policies(tmp_path, *texts: str):
    directory = tmp_path / "policies"
    directory.mkdir()
    for i, text in enumerate(texts):
        (directory / f"p{i}.yaml").write_text(text)
    return directory


@pytest.mark.parametrize("texts", [(NO_SHELL,), (NO_SHELL, TEAM_LABEL)], ids=["alone", "fused-with-another"])
async def test_a_nul_in_an_annotation_value_does_not_hide_a_command(tmp_path, texts):
    async with running_server(_policies(tmp_path, *texts), tmp_path) as server:
        denied = await server.admit("/validate", review(_pod("hidden", {"note": "ok\u0000rm -rf /"})))
        assert denied["allowed"] is False
        assert "annotation values must not hold shell commands" in denied["status"]["message"]
        # the NUL itself is no reason to deny: the exact answer, not a blanket refusal
        assert (await server.admit("/validate", review(_pod("fine", {"note": "ok\u0000fine"}))))["allowed"] is True
        assert (await server.admit("/validate", review(_pod("plain", {"note": "ok"}))))["allowed"] is True


async def test_a_nul_in_a_label_key_does_not_pass_for_the_label(tmp_path):
    async with running_server(_policies(tmp_path, NO_SHELL, TEAM_LABEL), tmp_path) as server:
        denied = await server.admit("/validate", review(_pod("fake-team", labels={"team\u0000x": "a"})))
        assert denied["allowed"] is False and "pods need a team label" in denied["status"]["message"]


async def test_a_rule_with_optionals_reads_a_nul_value_exactly_and_fails_closed_on_a_nul_key(tmp_path):
    async with running_server(_policies(tmp_path, NO_SHELL_OPTIONAL), tmp_path) as server:
        assert (await server.admit("/validate", review(_pod("fine", {"note": "ok\u0000fine"}))))["allowed"] is True
        denied = await server.admit("/validate", review(_pod("hidden", {"note": "ok\u0000rm -rf /"})))
        assert denied["allowed"] is False
        assert "annotation values must not hold shell commands" in denied["status"]["message"]
        # a NUL in a key (Kubernetes refuses those; if one gets through): only cel-python reads it, and it has
        # no optionals: an error, so the failure policy (Fail) denies
        denied = await server.admit("/validate", review(_pod("odd", {"note\u0000x": "rm -rf /"})))
        assert denied["allowed"] is False and "NUL" in denied["status"]["message"]


def test_quartermaster_apply_denies_the_hidden_command(tmp_path, capsys):
    policies = _policies(tmp_path, NO_SHELL, TEAM_LABEL)
    resource = tmp_path / "pod.json"   # JSON is YAML: the NUL travels as \u0000
    resource.write_text(json.dumps(_pod("hidden", {"note": "ok\u0000rm -rf /"})))
    assert main(["apply", "--policies", str(policies), str(resource)]) == 1
    assert "annotation values must not hold shell commands" in capsys.readouterr().err
    resource.write_text(json.dumps(_pod("fine", {"note": "ok\u0000fine"})))
    assert main(["apply", "--policies", str(policies), str(resource)]) == 0


def test_quartermaster_test_sees_the_hidden_command(tmp_path, capsys):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "policy.yaml").write_text(NO_SHELL)
    (suite / "resources.yaml").write_text(textwrap.dedent("""\
        apiVersion: v1
        kind: Pod
        metadata:
          name: hidden
          annotations:
            note: "ok\\0rm -rf /"
        spec:
          containers: [{name: app, image: nginx:1.27}]
        ---
        apiVersion: v1
        kind: Pod
        metadata:
          name: fine
          annotations:
            note: "ok\\0fine"
        spec:
          containers: [{name: app, image: nginx:1.27}]
        """))
    (suite / "kyverno-test.yaml").write_text(textwrap.dedent("""\
        apiVersion: cli.kyverno.io/v1alpha1
        kind: Test
        metadata:
          name: nul
        policies: [policy.yaml]
        resources: [resources.yaml]
        results:
        - {isValidatingPolicy: true, kind: Pod, policy: no-shell-in-annotations, resources: [hidden], result: fail}
        - {isValidatingPolicy: true, kind: Pod, policy: no-shell-in-annotations, resources: [fine], result: pass}
        """))
    assert main(["test", str(suite)]) == 0, capsys.readouterr()
    assert capsys.readouterr().out.strip().splitlines()[-1] == "2 passed, 0 failed"
