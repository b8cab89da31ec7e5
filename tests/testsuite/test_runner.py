"""`quartermaster test` end to end on small suites written here: matching, comparison, output, exit codes."""

import json
from pathlib import Path

from webhook.cli import main

POLICY = """\
apiVersion: policies.kyverno.io/v1alpha1
kind: ValidatingPolicy
metadata: {name: require-team}
spec:
  validationActions: [Audit]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}
  matchConditions:
  - name: not-system
    expression: "object.metadata.namespace != 'kube-system'"
  validations:
  - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
    message: the label team is required
---
apiVersion: policies.kyverno.io/v1alpha1
kind: MutatingPolicy
metadata: {name: add-owner}
spec:
  matchConstraints:
    namespaceSelector: {matchLabels: {managed: "true"}}
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"owner": "platform"}}}'
"""
RESOURCES = """\
apiVersion: v1
kind: Pod
metadata: {name: good, namespace: apps, labels: {team: a}}
spec: {containers: [{name: c, image: nginx}]}
---
apiVersion: v1
kind: Pod
metadata: {name: bad}
spec: {containers: [{name: c, image: nginx}]}
---
apiVersion: v1
kind: Pod
metadata: {name: system, namespace: kube-system}
spec: {containers: [{name: c, image: nginx}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: bad-deploy}
spec:
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec: {containers: [{name: c, image: nginx}]}
"""
PATCHED = """\
apiVersion: v1
kind: Pod
metadata: {name: good, namespace: apps, labels: {team: a, owner: platform}}
spec: {containers: [{name: c, image: nginx}]}
"""
VALUES = """\
apiVersion: cli.kyverno.io/v1alpha1
kind: Value
namespaces:
- {apiVersion: v1, kind: Namespace, metadata: {name: apps, labels: {managed: "true"}}}
"""


def _suite(tmp: Path, results: list[dict], extra: dict | None = None) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "policy.yaml").write_text(POLICY)
    (tmp / "resources.yaml").write_text(RESOURCES)
    (tmp / "patched.yaml").write_text(PATCHED)
    (tmp / "values.yaml").write_text(VALUES)
    suite = {"apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Test", "metadata": {"name": tmp.name},
             "policies": ["policy.yaml"], "resources": ["resources.yaml"], "variables": "values.yaml",
             "results": results, **(extra or {})}
    (tmp / "kyverno-test.yaml").write_text(json.dumps(suite))
    return tmp


def _run(capsys, *args: str) -> tuple[int, str]:
    code = main(["test", *args])
    return code, capsys.readouterr().out


def test_expected_results_pass_and_the_last_line_counts_them(tmp_path, capsys):
    _suite(tmp_path / "s", [
        {"policy": "require-team", "kind": "Pod", "resources": ["bad"], "result": "fail", "isValidatingPolicy": True},
        {"policy": "require-team", "kind": "Pod", "resources": ["apps/good"], "result": "pass"},
        {"policy": "require-team", "kind": "Pod", "resources": ["system"], "result": "skip"},  # matchConditions false
        {"policy": "require-team", "kind": "Deployment", "resources": ["bad-deploy"], "result": "fail"},  # autogen
        {"policy": "add-owner", "kind": "Pod", "resources": ["good"], "result": "pass", "patchedResources": "patched.yaml"},
        # not in apps (namespaceSelector): the Kyverno CLI calls this excluded, a pass
        {"policy": "add-owner", "kind": "Pod", "resources": ["bad"], "result": "pass"},
    ])
    code, out = _run(capsys, str(tmp_path))
    assert out.rstrip().splitlines()[-1] == "6 passed, 0 failed", out
    assert code == 0
    assert "ID" in out and "POLICY" in out and "REASON" in out and "Excluded" in out


def test_wrong_expectations_fail_with_reasons(tmp_path, capsys):
    (tmp_path / "s").mkdir()
    _suite(tmp_path / "s", [
        {"policy": "require-team", "kind": "Pod", "resources": ["bad"], "result": "pass"},
        {"policy": "require-team", "kind": "Pod", "resources": ["missing"], "result": "pass"},
        {"policy": "no-such-policy", "kind": "Pod", "resources": ["bad"], "result": "pass"},
        {"policy": "add-owner", "kind": "Pod", "resources": ["good"], "result": "pass", "patchedResources": "resources.yaml"},
    ])
    code, out = _run(capsys, str(tmp_path), "-o", "json", "--detailed-results")
    assert code == 1
    doc = json.loads(out[: out.rstrip().rindex("\n")])
    reasons = [r["REASON"] for r in doc[0]["results"]]
    assert reasons == ["Want pass, got fail", "Not found", "Not found", "Resource diff"]
    assert "the label team is required" in doc[0]["results"][0]["MESSAGE"]
    assert out.rstrip().splitlines()[-1] == "0 passed, 4 failed"


def test_one_broken_suite_fails_alone_and_unsupported_features_are_named(tmp_path, capsys):
    _suite(tmp_path / "a", [{"policy": "require-team", "kind": "Pod", "resources": ["bad"], "result": "fail"}])
    _suite(tmp_path / "b", [{"policy": "require-team", "kind": "Pod", "resources": ["bad"], "result": "fail"}],
           {"jsonPayloads": ["payload.json"]})
    broken = _suite(tmp_path / "c", [{"policy": "x", "kind": "Pod", "resources": ["bad"], "result": "fail"}])
    (broken / "policy.yaml").write_text("apiVersion: example.org/v1\nkind: Mystery\nmetadata: {name: x}\n")
    code, out = _run(capsys, str(tmp_path))
    assert code == 1
    assert "Unsupported: jsonpayloads" in out
    assert "unknown policy kind example.org/v1 Mystery" in out
    assert out.rstrip().splitlines()[-1] == "1 passed, 2 failed"


def test_unreadable_input_exits_2(tmp_path, capsys):
    assert main(["test", str(tmp_path / "nope")]) == 2
    (tmp_path / "empty").mkdir()
    assert main(["test", str(tmp_path / "empty")]) == 2


LOOKUP_POLICY = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: lookups}
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  variables:
  - {name: allowed, expression: "http.Get('https://registry.example.org/allowed').body.images"}
  - {name: team, expression: "globalContext.Get('teams', 'owner')"}
  - {name: quota, expression: "resource.Get('v1', 'configmaps', 'platform', 'quota').data.max"}
  validations:
  - expression: "object.spec.containers.all(c, c.image in variables.allowed)"
    message: image not allowed
  - expression: "variables.team == 'ml' && variables.quota == '3'"
    message: context mismatch
"""


def test_http_global_context_and_cluster_resources_answer_lookups(tmp_path, capsys):
    suite = tmp_path / "s"
    suite.mkdir()
    (suite / "policy.yaml").write_text(LOOKUP_POLICY)
    (suite / "resources.yaml").write_text(RESOURCES)
    (suite / "cluster.yaml").write_text(
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: ClusterResource\nspec:\n  resources:\n"
        "  - {apiVersion: v1, kind: ConfigMap, metadata: {name: quota, namespace: platform}, data: {max: '3'}}\n")
    (suite / "kyverno-test.yaml").write_text(json.dumps({
        "apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Test", "metadata": {"name": "lookups"},
        "policies": ["policy.yaml"], "resources": ["resources.yaml"], "clusterResources": ["cluster.yaml"],
        "apiCallResponses": [{"url": "https://registry.example.org/allowed", "method": "GET",
                              "response": {"statusCode": 200, "body": {"images": ["nginx"]}}}],
        "globalContextEntries": [{"name": "teams", "data": {"team": {"name": "ml"}},
                                  "projections": [{"name": "owner", "path": "team.name"}]}],
        "results": [{"policy": "lookups", "kind": "Pod", "resources": ["good", "bad"], "result": "pass"}],
    }))
    code, out = _run(capsys, str(suite))
    assert out.rstrip().splitlines()[-1] == "2 passed, 0 failed", out
    assert code == 0


GROUP_NAMES = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: team-namespaces}
spec:
  validationFailureAction: Enforce
  background: false
  rules:
  - name: prefix
    match: {any: [{resources: {kinds: [Namespace]}}]}
    validate:
      message: "names must start with one of {{request.userInfo.groups}}"
      deny:
        conditions:
          any:
          - key: "{{request.object.metadata.name}}"
            operator: AnyNotIn
            value: "{{ request.userInfo.groups[?contains(@, ':') == `false`][].join('-', [@, '*']) }}"
"""


def test_without_a_userinfo_file_the_request_has_no_user_as_in_the_kyverno_cli(tmp_path, capsys):
    """`kyverno test` leaves request.userInfo empty when the suite names no userinfo file: `groups` is then
    null (not a list with system:authenticated), and the condition's value is null, so nothing is denied."""
    suite = tmp_path / "s"
    suite.mkdir()
    (suite / "policy.yaml").write_text(GROUP_NAMES)
    (suite / "resources.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: team1-test}\n")
    (suite / "user.yaml").write_text("apiVersion: cli.kyverno.io/v1alpha1\nkind: UserInfo\nmetadata: {name: u}\n"
                                     "userInfo: {username: jdoe, groups: [team2, 'system:authenticated']}\n")
    test = {"apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Test", "metadata": {"name": "no-user"},
            "policies": ["policy.yaml"], "resources": ["resources.yaml"],
            "results": [{"policy": "team-namespaces", "rule": "prefix", "kind": "Namespace",
                         "resources": ["team1-test"], "result": "pass"}]}
    (suite / "kyverno-test.yaml").write_text(json.dumps(test))
    code, out = _run(capsys, str(suite))
    assert code == 0 and out.rstrip().splitlines()[-1] == "1 passed, 0 failed", out
    # with a user whose group is team2, team1-test is not one of team2-*: denied
    test["userinfo"] = "user.yaml"
    (suite / "kyverno-test.yaml").write_text(json.dumps(test))
    code, out = _run(capsys, str(suite), "--detailed-results")
    assert code == 1 and "names must start with one of" in out and "team2" in out, out


def test_a_refused_policy_fails_its_own_results_and_the_others_run(tmp_path, capsys):
    """As `kyverno test` skips a policy it cannot load: the suite's other policies are still checked."""
    suite = _suite(tmp_path / "s", [
        {"policy": "require-team", "kind": "Pod", "resources": ["bad"], "result": "fail"},
        {"policy": "mystery", "kind": "Pod", "resources": ["bad"], "result": "pass"},
    ])
    (suite / "policy.yaml").write_text(POLICY + "---\napiVersion: example.org/v1\nkind: Mystery\nmetadata: {name: mystery}\n")
    code, out = _run(capsys, str(suite), "--detailed-results")
    assert code == 1 and out.rstrip().splitlines()[-1] == "1 passed, 1 failed", out
    assert "Policy refused" in out and "unknown policy kind example.org/v1 Mystery" in out
    # a refused document no result names still fails the whole suite: nothing says what it would have changed
    (suite / "policy.yaml").write_text(POLICY + "---\napiVersion: example.org/v1\nkind: Mystery\nmetadata: {name: other}\n")
    code, out = _run(capsys, str(suite))
    assert code == 1 and out.rstrip().splitlines()[-1] == "0 passed, 2 failed", out


BOMB = "a: &a ['x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x']\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi"))


def test_yaml_alias_bombs_in_a_suite_are_refused_with_the_line_not_expanded(tmp_path, capsys):
    """A 9**9-element alias bomb (a few hundred bytes) in a suite file or its resources: refused from the
    parsed node graph (webhook.model.boundedyaml), never built."""
    suite = _suite(tmp_path / "resources", [{"policy": "require-team", "kind": "Pod", "resources": ["bad"],
                                             "result": "fail"}])
    (suite / "resources.yaml").write_text(RESOURCES + "---\n" + BOMB)
    code, out = _run(capsys, str(suite), "--detailed-results")
    assert code == 1 and "excessive aliasing" in out and "resources.yaml" in out, out
    bombed = tmp_path / "suite"
    bombed.mkdir()
    (bombed / "kyverno-test.yaml").write_text(BOMB)
    code, out = _run(capsys, str(bombed), "--detailed-results")
    assert code == 1 and "excessive aliasing" in out and "kyverno-test.yaml:" in out, out
