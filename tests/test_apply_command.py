"""`quartermaster apply` with a Kyverno CLI user's habits (issue 43): `-f/--values-file`, `-s/--set`,
`-e/--exception`, each proven by what it changes, and the errors that name the file (or option) and the field."""

from __future__ import annotations

import yaml

from tests.families.kyverno.test_tenancy import DISALLOW_PRIVILEGED, pod
from tests.support import REPO
from tests.testsuite.test_subresources import SCALE_POLICY
from webhook.cli import main

NOTEBOOK_HOME = str(REPO / "examples" / "kyverno" / "notebook-home" / "notebook-home.yaml")
NOTEBOOK_VALUES = str(REPO / "examples" / "kyverno" / "notebook-home" / ".kyverno-test" / "values.yaml")
NOTEBOOK_POD = str(REPO / "examples" / "notebook-pod.yaml")
STATE = str(REPO / "examples" / "state")

# denies a pod's UPDATE only, and a pod whose `tier` variable says "frozen": the verdict follows the values
UPDATE_GUARD = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: update-guard}
spec:
  validationFailureAction: Enforce
  background: false
  rules:
  - name: no-updates
    match: {any: [{resources: {kinds: [Pod], operations: [UPDATE]}}]}
    validate:
      message: pods are replaced, not updated
      deny: {}
  - name: frozen-tier
    match: {any: [{resources: {kinds: [Pod]}}]}
    context:
    - name: tier
      variable: {value: open}
    validate:
      message: "tier {{ tier }} takes no new pods"
      deny:
        conditions:
          any:
          - {key: "{{ tier }}", operator: Equals, value: frozen}
"""

EXCEPTION = """\
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: gpu-driver, namespace: team-a}
spec:
  exceptions:
  - {policyName: disallow-privileged, ruleNames: [privileged-containers]}
  match: {any: [{resources: {kinds: [Pod], names: [driver]}}]}
"""


def _pod(name: str = "web", namespace: str = "team-a", privileged: bool = False) -> dict:
    return pod(namespace, privileged, name)


def _files(tmp_path, **texts: str) -> dict[str, str]:
    paths = {}
    for name, text in texts.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(text)
        paths[name] = str(path)
    return paths


def _apply(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["apply", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _home(out: str) -> str:
    (pod,) = yaml.safe_load_all(out)
    env = {e["name"]: e.get("value") for c in pod["spec"]["containers"] for e in c.get("env") or []}
    return str(env.get("HOME", ""))


def test_a_values_file_gives_the_namespace_and_the_variables_and_set_wins(capsys):
    """Without --state the namespace is unknown; Kyverno's values file knows it (namespaceSelector) and the owner
    (globalValues); --set overrides the file, as kyverno apply puts its variables last."""
    code, out, err = _apply(capsys, "-p", NOTEBOOK_HOME, "-r", NOTEBOOK_POD)
    assert code == 0 and _home(out) == "" and "namespace 'jdoe' is not in the cluster state" in err
    code, out, err = _apply(capsys, "-p", NOTEBOOK_HOME, "-f", NOTEBOOK_VALUES, "-r", NOTEBOOK_POD)
    assert (code, _home(out)) == (0, "/eos/user/j/jdoe"), err
    code, out, err = _apply(capsys, "-p", NOTEBOOK_HOME, "--values-file", NOTEBOOK_VALUES,
                            "--set", "owner=asmith@example.org", "-r", NOTEBOOK_POD)
    assert (code, _home(out)) == (0, "/eos/user/a/asmith"), err


def test_set_request_operation_makes_every_resource_an_update(tmp_path, capsys):
    files = _files(tmp_path, policy=UPDATE_GUARD, pod=yaml.safe_dump(_pod()))
    code, out, err = _apply(capsys, "-p", files["policy"], files["pod"])
    assert code == 0, err
    code, out, err = _apply(capsys, "-p", files["policy"], "-s", "request.operation=UPDATE", files["pod"])
    assert code == 1 and "pods are replaced, not updated" in err and out == ""


def test_set_takes_several_pairs_and_values_per_resource_and_per_rule(tmp_path, capsys):
    frozen = {"apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Value",
              "policies": [{"name": "update-guard", "resources": [{"name": "batch", "values": {"tier": "frozen"}}]}]}
    by_rule = {"apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Value",
               "policies": [{"name": "update-guard", "rules": [{"name": "frozen-tier", "values": {"tier": "frozen"}}]}]}
    files = _files(tmp_path, policy=UPDATE_GUARD, pods=yaml.safe_dump_all([_pod("web"), _pod("batch")]),
                   frozen=yaml.safe_dump(frozen), by_rule=yaml.safe_dump(by_rule))
    code, out, err = _apply(capsys, "-p", files["policy"], "-f", files["frozen"], files["pods"])
    assert code == 1 and "Pod team-a/batch" in err and "tier frozen takes no new pods" in err
    assert [p["metadata"]["name"] for p in yaml.safe_load_all(out)] == ["web"]  # web's values say nothing
    code, out, err = _apply(capsys, "-p", files["policy"], "-f", files["by_rule"], files["pods"])
    assert code == 1 and out == "" and "0 admitted, 2 denied" in err and "tier frozen takes no new pods" in err
    code, out, err = _apply(capsys, "-p", files["policy"], "--set", "tier=open,request.operation=CREATE",
                            "-f", files["by_rule"], files["pods"])
    assert code == 0, err  # --set over the rule's values


def test_an_exception_given_with_exception_exempts_under_the_tenancy_rules(tmp_path, capsys):
    files = _files(tmp_path, policy=DISALLOW_PRIVILEGED, exception=EXCEPTION,
                   pods=yaml.safe_dump_all([_pod("driver", privileged=True)]),
                   elsewhere=yaml.safe_dump_all([_pod("driver", namespace="team-b", privileged=True)]))
    code, out, err = _apply(capsys, "-p", files["policy"], files["pods"])
    assert code == 1 and "privileged containers are not allowed" in err
    code, out, err = _apply(capsys, "-p", files["policy"], "--exception", files["exception"],
                            "--exception-namespace", "team-a", files["pods"])
    assert code == 0 and "rule is skipped due to policy exception team-a/gpu-driver" in err
    assert [p["metadata"]["name"] for p in yaml.safe_load_all(out)] == ["driver"]
    # the same rules as an exception in --policies: only for resources of its own namespace...
    code, out, err = _apply(capsys, "-p", files["policy"], "-e", files["exception"], "--exception-namespace", "team-a",
                            files["elsewhere"])
    assert code == 1 and "privileged containers are not allowed" in err
    # ...and only from a namespace the platform lists
    code, out, err = _apply(capsys, "-p", files["policy"], "--exceptions", files["exception"], files["pods"])
    assert code == 2 and "PolicyExceptions of namespace team-a are not honoured" in err and "--exception-namespace" in err


def test_an_exception_lifts_a_mutate_rule_and_its_patch(capsys):
    exception = str(REPO / "examples" / "exceptions" / "notebook-home-jdoe.yaml")
    code, out, err = _apply(capsys, "-p", NOTEBOOK_HOME, "--state", STATE, NOTEBOOK_POD)
    assert (code, _home(out)) == (0, "/eos/user/j/jdoe"), err
    code, out, err = _apply(capsys, "-p", NOTEBOOK_HOME, "--state", STATE, "--exception", exception,
                            "--exception-namespace", "jdoe", NOTEBOOK_POD)
    assert (code, _home(out)) == (0, ""), err
    assert list(yaml.safe_load_all(out)) == list(yaml.safe_load_all(open(NOTEBOOK_POD).read()))
    assert err.count("rule is skipped due to policy exception jdoe/notebook-home-analysis") == 2


def test_an_exception_file_holds_exceptions_only(tmp_path, capsys):
    files = _files(tmp_path, policy=DISALLOW_PRIVILEGED, pods=yaml.safe_dump(_pod()))
    code, out, err = _apply(capsys, "-p", files["policy"], "-e", files["policy"], "--exception-namespace", "*",
                            files["pods"])
    assert code == 2 and out == ""
    assert f"{files['policy']}:2: document 0 field kind: an --exception file holds PolicyExceptions only" in err


def test_malformed_values_and_set_are_bad_input_naming_file_and_field(tmp_path, capsys):
    files = _files(tmp_path, policy=UPDATE_GUARD, pods=yaml.safe_dump(_pod()),
                   listed="kind: Value\nglobalValues: [tier, frozen]\n",
                   unnamed="kind: Value\npolicies:\n- rules: [{name: r, values: {a: 1}}]\n",
                   rule_values="kind: Value\npolicies:\n- name: p\n  rules: [{name: r, values: [1]}]\n",
                   manifest=yaml.safe_dump(_pod()), broken="kind: Value\nglobalValues: {a: [1\n")
    expected = {
        "listed": f"{files['listed']}: globalValues: must be a mapping, got list",
        "unnamed": f"{files['unnamed']}: policies[0].name: a name is required",
        "rule_values": f"{files['rule_values']}: policies[0].rules[0].values: must be a mapping, got list",
        "manifest": f"{files['manifest']}: kind: 'Pod' is not a Kyverno values file",
        "broken": f"{files['broken']}:3: invalid YAML",
    }
    for name, message in expected.items():
        code, out, err = _apply(capsys, "-p", files["policy"], "-f", files[name], files["pods"])
        assert (code, out) == (2, ""), name
        assert err.startswith(f"quartermaster apply: {message}"), (name, err)
    for given in ("request.operation", "a=1,=2"):
        try:
            main(["apply", "-p", files["policy"], "--set", given, files["pods"]])
        except SystemExit as exc:
            assert exc.code == 2
        err = capsys.readouterr().err
        assert "argument -s/--set:" in err and "expected key=value" in err, err
    code, out, err = _apply(capsys, "-p", files["policy"], "--set", "request.operation=PATCH", files["pods"])
    assert code == 2 and "request.operation: 'PATCH' is not one of CREATE, UPDATE, DELETE" in err


def test_values_subresources_send_a_scale_as_the_deployments_subresource(tmp_path, capsys):
    values = {"apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Value", "subresources": [{
        "parentResource": {"group": "apps", "version": "v1", "kind": "Deployment", "name": "deployments"},
        "subresource": {"group": "autoscaling", "version": "v1", "kind": "Scale", "name": "deployments/scale"}}]}
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web", "namespace": "default"},
             "spec": {"replicas": 8}}
    files = _files(tmp_path, policy=SCALE_POLICY, values=yaml.safe_dump(values), scale=yaml.safe_dump(scale))
    code, out, err = _apply(capsys, "-p", files["policy"], files["scale"])
    assert code == 0, err  # a Scale on its own matches no deployments/scale rule
    code, out, err = _apply(capsys, "-p", files["policy"], "-f", files["values"], files["scale"])
    assert code == 1 and "scale to 5 at most" in err
