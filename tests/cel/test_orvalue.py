"""Kyverno's orValue compatibility (env "kyverno", pkg/cel/compiler/env.go OrValueCompatEnvOptions): `x.orValue(y)`
on a plain `x` is `x`, a missing field stays an error (Kyverno's compat function is strict), an optional gives its
value or `y`. Each case was checked against `kyverno test` of Kyverno v1.19.1 (load-tests/kyverno_differential.py
found the missing-field cases: we answered `y` where Kyverno reports an error)."""

import argparse
import io
import textwrap

import pytest

from tests.families.cel.test_fused import named, policy
from webhook.cel import CelCompiler, CelError
from webhook.cel.orvalue import rewrite_kyverno_or_value
from webhook.policy.family import CelEvaluation
from webhook.testsuite.command import run_test_command


@pytest.mark.parametrize("source,expected", [
    ("container.volumeMounts.orValue([])", "container.volumeMounts"),
    ("object.spec.?volumes.orValue([])", "object.spec.?volumes.orValue([])"),
    ("resource.List('v1', 'pods', ns).items.orValue([])", "resource.List('v1', 'pods', ns).items"),
    ("variables.hn.orValue(false) == false", "variables.?hn.orValue(false) == false"),
    ("variables.?hn.orValue(false)", "variables.?hn.orValue(false)"),
    ("c.?securityContext.allowPrivilegeEscalation.orValue(true)", "c.?securityContext.?allowPrivilegeEscalation.orValue(true)"),
    ("a.b.?c.d.e.orValue(1)", "a.b.?c.?d.?e.orValue(1)"),
    ("a.variables.b.orValue(1)", "a.variables.b"),
    ("'x.y.orValue(1)'", "'x.y.orValue(1)'"),
])
def test_rewrite(source, expected):
    assert rewrite_kyverno_or_value(source) == expected


POD = {"metadata": {"name": "p", "labels": {"x": "y"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


@pytest.mark.parametrize("expression,value", [
    ("object.spec.containers.orValue([]).size()", 1),                 # present: the value
    ("object.spec.?hostNetwork.orValue(false)", False),                # an optional: its value or y
    ("object.spec.containers[0].?volumeMounts.orValue([]).size()", 0),
])
def test_kyverno_env_values(expression, value):
    assert CelCompiler().compile(expression, env="kyverno").evaluate({"object": POD}) == value


@pytest.mark.parametrize("expression", [
    "object.spec.containers[0].volumeMounts.orValue([]).size()",      # a missing field: Kyverno reports an error
    "object.metadata.labels.app.orValue('none')",
    "object.status.?phase.orValue('')",                                # a missing field before `.?`
])
def test_kyverno_env_missing_plain_field_is_an_error(expression):
    with pytest.raises(CelError):
        CelCompiler().compile(expression, env="kyverno").evaluate({"object": POD})


def test_an_optional_variable_is_never_read_as_unset(tmp_path):
    """`variables.hn` holds `object.spec.?hostNetwork`; `variables.hn.orValue(false) == false` must deny a pod with
    hostNetwork: true (Kyverno: fail). Before, the variable's optional could not be held, the read found it unset and
    the pod passed. Both evaluation routes."""
    (tmp_path / "policy.yaml").write_text(named("host-network", policy(
        variables="""\
            variables:
            - {name: hn, expression: "object.spec.?hostNetwork"}
            - {name: name, expression: "object.metadata.name"}""",
        validations="""\
            - expression: "variables.hn.orValue(false) == false"
            - expression: "variables.name.orValue('x') != 'bad'"
            """)))
    (tmp_path / "resources.yaml").write_text(textwrap.dedent("""\
        apiVersion: v1
        kind: Pod
        metadata: {name: hostnet}
        spec: {hostNetwork: true, containers: [{name: c, image: nginx}]}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: plain}
        spec: {containers: [{name: c, image: nginx}]}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: bad}
        spec: {containers: [{name: c, image: nginx}]}
        """))
    (tmp_path / "kyverno-test.yaml").write_text(textwrap.dedent("""\
        apiVersion: cli.kyverno.io/v1alpha1
        kind: Test
        metadata: {name: host-network}
        policies: [policy.yaml]
        resources: [resources.yaml]
        results:
        - {policy: host-network, resources: [hostnet, bad], kind: Pod, result: fail}
        - {policy: host-network, resources: [plain], kind: Pod, result: pass}
        """))
    for route in (CelEvaluation.DEFAULT, CelEvaluation.REFERENCE):
        out, err = io.StringIO(), io.StringIO()
        args = argparse.Namespace(paths=[str(tmp_path)], detailed_results=True, output="table", fail_only=False)
        run_test_command(args, out, err, cel_evaluation=route)
        assert out.getvalue().rstrip().endswith("3 passed, 0 failed"), (route, out.getvalue())
