"""Each rule's handler is chosen when the policy is compiled, by the rule's form (Kyverno's pkg/engine/handlers)."""

from __future__ import annotations

import pytest

from webhook.families.kyverno.cel_rule import CompiledCel
from webhook.families.kyverno.compile import compile_policy
from webhook.families.kyverno.context_entries import ApiCallSource, ConfigMapSource, NoSource, VariableSource
from webhook.families.kyverno.foreach import ForeachValidation
from webhook.families.kyverno.generate import CloneGeneration, DataGeneration
from webhook.families.kyverno.mutate import ForeachMutation, PatchMutation
from webhook.families.kyverno.podsecurity import PodSecurityCheck
from webhook.families.kyverno.rule_types import GenerateRule, MutateRule, ValidateRule
from webhook.families.kyverno.validate import AnyPatternCheck, DenyCheck, PatternCheck
from webhook.model.results import Action

PODS = {"any": [{"resources": {"kinds": ["Pod"]}}]}
DENY = {"conditions": {"any": [{"key": "a", "operator": "Equals", "value": "b"}]}}


def compiled(body: dict, cel=None):
    return compile_policy({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"},
                           "spec": {"rules": [{"name": "r", "match": PODS, **body}]}}, cel)


@pytest.mark.parametrize("body, record, handler", [
    ({"validate": {"pattern": {"metadata": {"name": "?*"}}}}, ValidateRule, PatternCheck),
    ({"validate": {"anyPattern": [{"metadata": {"name": "a*"}}]}}, ValidateRule, AnyPatternCheck),
    ({"validate": {"deny": DENY}}, ValidateRule, DenyCheck),
    ({"validate": {"foreach": [{"list": "request.object.spec.containers", "deny": DENY}]}}, ValidateRule,
     ForeachValidation),
    ({"validate": {"podSecurity": {"level": "baseline"}}}, ValidateRule, PodSecurityCheck),
    ({"mutate": {"patchStrategicMerge": {"metadata": {"labels": {"a": "b"}}}}}, MutateRule, PatchMutation),
    ({"mutate": {"patchesJson6902": "- {op: add, path: /metadata/labels, value: {}}"}}, MutateRule, PatchMutation),
    ({"mutate": {"foreach": [{"list": "request.object.spec.containers", "patchStrategicMerge": {}}]}}, MutateRule,
     ForeachMutation),
    ({"generate": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "namespace": "n", "data": {}}},
     GenerateRule, DataGeneration),
    ({"generate": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "namespace": "n",
                   "clone": {"name": "c", "namespace": "src"}}}, GenerateRule, CloneGeneration),
])
def test_the_handler_is_chosen_by_the_rules_form(body, record, handler):
    policy = compiled(body)
    # the rule and its autogen- rules for pod controllers: each of the same type, with its own handler
    assert [r.head.name for r in policy.rules][0] == "r"
    assert all(isinstance(r, record) and isinstance(r.handler, handler) for r in policy.rules)
    by_type = {ValidateRule: policy.validate_rules, MutateRule: policy.mutate_rules, GenerateRule: policy.generate_rules}
    assert by_type[record] == policy.rules


def test_a_cel_rule_gets_the_cel_handler():
    from webhook.cel import CelCompiler

    rule = compiled({"validate": {"cel": {"expressions": [{"expression": "true"}]}}}, CelCompiler()).rules[0]
    assert isinstance(rule.handler, CompiledCel) and not rule.spares_existing


def test_actions_and_context_sources_are_compiled_once():
    body = {"context": [{"name": "v", "variable": {"value": 1}}, {"name": "cm", "configMap": {"name": "x"}},
                        {"name": "call", "apiCall": {"urlPath": "/api/v1/pods"}}, {"name": "odd"}],
            "validate": {"failureAction": "Enforce", "deny": DENY}}
    rule = compiled(body).rules[0]
    assert [type(e.source) for e in rule.head.context] == [VariableSource, ConfigMapSource, ApiCallSource, NoSource]
    assert rule.action is Action.ENFORCE and rule.explicit_action and rule.spares_existing
