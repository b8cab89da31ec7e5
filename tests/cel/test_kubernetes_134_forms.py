"""What Kubernetes 1.34 stores CEL expressions with, in policies as platform teams write them, judged through
real AdmissionReviews over HTTPS to `serve`: two-variable comprehensions, lists v3's `sortBy`, the named-format
library; and `cel.bind`, which Kubernetes' admission environment does not declare (Kyverno's does).

Before these forms compiled, such a policy was broken: under its failure policy (Fail) it denied every pod it
matched, compliant or not, and the platform's rule was never applied as written."""

from __future__ import annotations

import pytest

from tests.support import policy_dir, review, running_server
from webhook.cel import CelCompiler, CelError
from webhook.cel.values import to_json
from webhook.cli import main

_VAP = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: {name}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [pods]
  validations:
  - expression: {expression}
    message: {message}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: {name}
spec:
  policyName: {name}
  validationActions: [Deny]
"""

# only the first container may come from anywhere (the notebook image); every sidecar from the platform registry
SIDECARS = _VAP.format(
    name="sidecars-from-platform-registry",
    expression="\"object.spec.containers.all(i, c, i == 0 || c.image.startsWith('registry.platform/'))\"",
    message="sidecars must come from registry.platform")
# label values must be valid label values, named by the format library, keys mapped to their problems
LABELS = _VAP.format(
    name="label-values-valid",
    expression="\"object.metadata.?labels.orValue({}).transformMap(k, v, format.labelValue().validate(v).orValue([]))"
               ".all(k, problems, problems.size() == 0)\"",
    message="label values must be valid")
# the container sorted first by name must not be privileged (a rule written with sortBy)
FIRST_BY_NAME = _VAP.format(
    name="first-container-unprivileged",
    expression="\"!object.spec.containers.sortBy(c, c.name)[0].?securityContext.?privileged.orValue(false)\"",
    message="the first container by name must not be privileged")
BIND_IN_VAP = _VAP.format(
    name="bound-name", expression="\"cel.bind(n, object.metadata.name, n.startsWith('team-'))\"",
    message="pod names start with team-")

BIND_IN_KYVERNO = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: bound-name-kyverno
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [pods]
  validations:
  - expression: "cel.bind(n, object.metadata.name, n.startsWith('team-'))"
    message: pod names start with team-
"""


def _pod(name: str, images: list[str], labels: dict | None = None, privileged: str | None = None) -> dict:
    containers = [{"name": f"c{i}", "image": image} for i, image in enumerate(images)]
    if privileged is not None:
        next(c for c in containers if c["name"] == privileged)["securityContext"] = {"privileged": True}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "team-a", "labels": labels or {"team": "a"}},
            "spec": {"containers": containers}}


def _policies(tmp_path, *texts: str):
    return policy_dir(tmp_path / "policies", {f"p{i}.yaml": text for i, text in enumerate(texts)})


async def _allowed(server, pod: dict) -> dict:
    return await server.admit("/validate", review(pod))


async def test_two_variable_comprehension_judges_each_container_by_its_index(tmp_path):
    async with running_server(_policies(tmp_path, SIDECARS), tmp_path) as server:
        compliant = await _allowed(server, _pod("nb", ["jupyter/scipy:2024", "registry.platform/proxy:1"]))
        assert compliant["allowed"] is True, compliant
        smuggled = await _allowed(server, _pod("nb2", ["jupyter/scipy:2024", "evil.example/miner:1"]))
        assert smuggled["allowed"] is False
        assert "sidecars must come from registry.platform" in smuggled["status"]["message"]


async def test_named_formats_and_transform_map_validate_label_values(tmp_path):
    async with running_server(_policies(tmp_path, LABELS), tmp_path) as server:
        assert (await _allowed(server, _pod("ok", ["nginx"], {"team": "a", "tier": "web"})))["allowed"] is True
        # a label value the API server itself would refuse, sent as the tenant wrote it
        denied = await _allowed(server, _pod("bad", ["nginx"], {"team": "-a-"}))
        assert denied["allowed"] is False and "label values must be valid" in denied["status"]["message"]


async def test_sort_by_orders_containers_as_kubernetes_does(tmp_path):
    async with running_server(_policies(tmp_path, FIRST_BY_NAME), tmp_path) as server:
        # c1 is privileged; sorted by name c0 comes first, so the rule holds
        assert (await _allowed(server, _pod("a", ["x", "y"], privileged="c1")))["allowed"] is True
        denied = await _allowed(server, _pod("b", ["x", "y"], privileged="c0"))
        assert denied["allowed"] is False
        assert "the first container by name must not be privileged" in denied["status"]["message"]


def test_cel_bind_in_an_admission_policy_is_refused_naming_the_field(tmp_path, capsys):
    """Kubernetes' admission environment declares no `cel.bind`: the API server refuses such a policy, so must we."""
    assert main(["validate", str(_policies(tmp_path, BIND_IN_VAP))]) == 2
    told = capsys.readouterr()
    out = told.out + told.err
    assert "spec.validations[0].expression" in out and "cel.bind is not declared" in out, out


async def test_cel_bind_in_a_kyverno_policy_keeps_working(tmp_path):
    """Kyverno's CEL environment has the bindings extension: its kinds keep it."""
    async with running_server(_policies(tmp_path, BIND_IN_KYVERNO), tmp_path) as server:
        assert (await _allowed(server, _pod("team-web", ["nginx"])))["allowed"] is True
        denied = await _allowed(server, _pod("other", ["nginx"]))
        assert denied["allowed"] is False and "pod names start with team-" in denied["status"]["message"]


@pytest.mark.parametrize("backend", ["cel-expr-python", "cel-python"])
@pytest.mark.parametrize("expression, expected", [
    ("[10, 20].all(i, v, v == (i + 1) * 10)", True),
    ("{'a': 1, 'b': 2}.exists(k, v, k == 'b' && v == 2)", True),
    ("[1, 2, 3].existsOne(i, v, v > i + 1)", False),
    ("['a', 'b'].transformList(i, v, v + string(i))", ["a0", "b1"]),
    ("[1, 2, 3].transformList(i, v, v % 2 == 1, v * 10)", [10, 30]),
    ("{'a': 1}.transformMap(k, v, v + 1)", {"a": 2}),
    ("['x', 'y'].transformMapEntry(i, v, {v: i})", {"x": 0, "y": 1}),
    ("[3, 1, 2].sortBy(x, -x)", [3, 2, 1]),
    ("[[1, 2], [3]].all(i, v, v.all(i, w, w > i))", True),   # the inner i shadows the outer one
])
def test_two_variable_forms_evaluate_on_both_backends(backend, expression, expected):
    assert CelCompiler(backend).compile(expression).evaluate({}) == expected


@pytest.mark.parametrize("expression, message", [
    ("[1].all(i, v, v == 'a')", "no matching overload"),           # v keeps the element type, as in Kubernetes
    ("['x', 'y'].transformMapEntry(i, v, {'k': i})", "already exists"),
    ("x.all(i, v, [1].exists(x, v == x))", "rename the inner variable"),
])
def test_two_variable_forms_fail_as_kubernetes_does(expression, message):
    with pytest.raises(CelError, match=message):
        CelCompiler("cel-expr-python").compile(expression, "kyverno").evaluate({"x": [1]})


@pytest.mark.parametrize("expression, expected", [
    ("format.dns1123Label().validate('my-name').hasValue()", False),
    ("format.dns1123Label().validate('a.b').value()", ["must not contain dots"]),
    ("format.dns1123LabelPrefix().validate('gen-').hasValue()", False),
    ("format.named('uuid').value().validate('123e4567-e89b-12d3-a456-426614174000').hasValue()", False),
    ("format.named('nope').hasValue()", False),
    ("format.qualifiedName().validate('a/b/c').value().size()", 1),
    ("format.uri().validate('x').value()", ['parse "x": invalid URI for request']),
    ("format.date().validate('2023-02-29').value()", ["invalid date"]),
])
def test_named_formats_answer_as_kubernetes(expression, expected):
    assert CelCompiler("cel-expr-python").compile(expression).evaluate({}) == expected


def test_the_named_formats_are_refused_by_the_backend_without_optionals():
    with pytest.raises(CelError, match="not supported by the cel-python backend"):
        CelCompiler("cel-python").compile("format.dns1123Label().validate('a').hasValue()")


# a ratio a tenant writes in an annotation, compared with an int limit: Kubernetes compiles double < int
RATIO = _VAP.format(
    name="overcommit-ratio",
    expression="\"double(object.metadata.?annotations['quartermaster.dev/overcommit'].orValue('0')) < 1\"",
    message="overcommit must stay below 1")


async def test_a_double_compared_with_an_int_compiles_and_judges(tmp_path):
    async with running_server(_policies(tmp_path, RATIO), tmp_path) as server:
        fine = _pod("fine", ["nginx"])
        fine["metadata"]["annotations"] = {"quartermaster.dev/overcommit": "0.5"}
        assert (await _allowed(server, fine))["allowed"] is True
        greedy = _pod("greedy", ["nginx"])
        greedy["metadata"]["annotations"] = {"quartermaster.dev/overcommit": "1.5"}
        denied = await _allowed(server, greedy)
        assert denied["allowed"] is False and "overcommit must stay below 1" in denied["status"]["message"]


@pytest.mark.parametrize("expression, expected", [
    ("5 < 10.0", True), ("size([1, 2]) > 1u", True), ("2u >= 3.5", False), ("1 <= 1.0", True),
    ("duration('1.5s').getMilliseconds()", 1500), ("duration('-90m').getMilliseconds()", -5400000),
    ("timestamp('2024-01-01T00:00:01.250Z').getMilliseconds()", 250),
])
def test_numeric_ordering_and_milliseconds_as_kubernetes(expression, expected):
    assert CelCompiler("cel-expr-python").compile(expression).evaluate({}) == expected


def test_cross_type_ordering_is_refused_by_the_reference_backend_at_compile_time():
    with pytest.raises(CelError, match="not supported by the cel-python backend"):
        CelCompiler("cel-python").compile("5 < 10.0")


def test_a_variable_duration_keeps_its_nanoseconds_into_the_next_expression():
    """A variable's value evaluated on its own (the reference path of a policy's variables) reached the next
    expression as Python's timedelta, which drops the last three digits: `1.0000001s` came back as `1s` and
    passed a `<= 1s` limit Kubernetes enforces."""
    compiler = CelCompiler("cel-expr-python")
    lifetime = compiler.compile("duration(object.metadata.annotations.lifetime)").evaluate(
        {"object": {"metadata": {"annotations": {"lifetime": "1.0000001s"}}}})
    assert compiler.compile("variables.lifetime <= duration('1s')").evaluate(
        {"variables": {"lifetime": lifetime}}) is False


@pytest.mark.parametrize("expression, nanoseconds, text", [
    ("duration('1.000000001s')", 1_000_000_001, "1.000000001s"), ("duration('-1.5s')", -1_500_000_000, "-1.5s"),
    ("duration('1ns')", 1, "0.000000001s"),
])
def test_a_duration_result_keeps_its_nanoseconds(expression, nanoseconds, text):
    value = CelCompiler("cel-expr-python").compile(expression).evaluate({})
    assert value.nanoseconds == nanoseconds and to_json(value) == text


def test_a_timestamp_result_keeps_its_nanoseconds():
    value = CelCompiler("cel-expr-python").compile("timestamp('2024-01-01T00:00:00.123456789Z')").evaluate({})
    assert value.nanosecond == 123456789 and to_json(value) == "2024-01-01T00:00:00.123456789Z"
