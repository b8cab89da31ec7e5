"""The fast path (variables folded into the expression, one activation per request) gives the reference
path's results: the same values, the same errors and messages, across the pod-security corpus too."""

from pathlib import Path

import pytest
import yaml

from webhook.cel import Activation, CelCompiler
from webhook.cel.inline import bind_variables
from webhook.families.cel.base import shared_activation
from webhook.families.cel.scope import Scope, Variables, compile_expr
from webhook.model.policy import EvalContext
from webhook.state.memory import InMemoryClusterState

CEL = CelCompiler()
CORPUS = next((parent / "shared" / "conformance" / "kyverno-policies" / "pod-security-vpol"
               for parent in Path(__file__).resolve().parents
               if (parent / "shared" / "conformance" / "kyverno-policies").is_dir()), Path("/nonexistent"))
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "apps"},
       "spec": {"containers": [{"name": "c", "image": "nginx", "securityContext": {"privileged": True,
                                                                                  "capabilities": {"add": ["NET_ADMIN"]}}}],
                "initContainers": [{"name": "i", "image": "busybox", "securityContext": {"runAsUser": 0}}],
                "hostNetwork": True, "volumes": [{"name": "h", "hostPath": {"path": "/"}}]}}
BASE = {"object": POD, "oldObject": None, "request": {"operation": "CREATE"}, "namespaceObject": None}


def outcome(scope: Scope, expr) -> tuple[str, object]:
    try:
        return "ok", scope.evaluate(expr)
    except Exception as exc:  # the message is part of the contract
        return "error", str(exc)


def both(variables_raw, expression: str) -> tuple[tuple, tuple]:
    fast = Variables.compile(CEL, variables_raw, "spec.variables", "kyverno")
    reference = Variables(fast.order, fast.exprs, None)  # no compiler: nothing folds beyond variable-free expressions
    expr = compile_expr(CEL, expression, "spec.validations[0].expression", "kyverno")
    return outcome(Scope(BASE, fast, None), expr), outcome(Scope(BASE, reference, None), expr)


VARIABLES = [{"name": "all", "expression": "object.spec.containers + object.spec.?initContainers.orValue([])"},
             {"name": "broken", "expression": "object.spec.nothing.here"},
             {"name": "names", "expression": "variables.all.map(c, c.name)"}]


@pytest.mark.parametrize("expression", [
    "variables.names.size() == 2",
    "variables.all.all(c, c.?securityContext.?privileged.orValue(false) == false)",
    "variables.broken == 1",                      # the variable's own error, named
    "true || variables.broken == 1",              # an unread failing variable does not matter
    "variables.?names.orValue([]).size() > 1",
    "has(variables.names)",                       # not folded: the reference path answers
    "variables.names.join(',')",
])
def test_folded_and_reference_agree(expression):
    fast, reference = both(VARIABLES, expression)
    assert fast == reference


def test_bind_refuses_what_it_cannot_fold_faithfully():
    assert bind_variables("variables.a", [("a", "resource.Get('v1', 'configmaps', 'ns', 'x')")], True) is None
    assert bind_variables("has(variables.a)", [("a", "1")], False) is None
    assert bind_variables("variables['a'] == 1", [("a", "1")], False) is None
    folded = bind_variables("variables.b > 0", [("a", "1"), ("b", "variables.a + 1")], False)
    assert folded is not None and CEL.compile_bound("variables.b > 0", [("a", "1"), ("b", "variables.a + 1")], "admission")


def test_one_activation_per_request_for_the_same_values():
    ctx = EvalContext(InMemoryClusterState([]), None, False)
    values = dict(BASE)
    first = shared_activation(ctx, values)
    assert isinstance(first, Activation)
    assert shared_activation(ctx, dict(values)) is first           # same objects: shared
    assert shared_activation(ctx, {**values, "params": {"x": 1}}) is not first


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the pod-security ValidatingPolicies are not here")
def test_corpus_expressions_agree():
    checked = 0
    for path in sorted(p for p in CORPUS.rglob("*.yaml") if ".kyverno-test" not in p.parts):
        spec = yaml.safe_load(path.read_text())["spec"]
        for validation in spec.get("validations") or []:
            fast, reference = both(spec.get("variables"), validation["expression"])
            assert fast == reference, path
            checked += 1
    assert checked >= 16
