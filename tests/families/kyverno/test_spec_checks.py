"""The policies Kyverno refuses at `kubectl apply` are refused here too, with Kyverno's words (the cases of Kyverno
v1.19.1's chainsaw `policy-validation` folder), and the policies it accepts still load."""

import copy

import pytest

from webhook.cel import CelCompiler
from webhook.families.kyverno.compile import PolicyError, compile_policy

RULE = {"name": "deny", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
        "validate": {"failureAction": "Audit", "deny": {}}}


def policy(kind="ClusterPolicy", rule=None, **spec):
    doc = {"apiVersion": "kyverno.io/v1", "kind": kind, "metadata": {"name": "p", "namespace": "team"},
           "spec": {"rules": [copy.deepcopy(rule or RULE)], **spec}}
    return doc


def kinds(*selectors):
    return {**RULE, "match": {"any": [{"resources": {"kinds": list(selectors)}}]}}


def with_subjects(*subjects):
    return {**RULE, "match": {"any": [{"resources": {"kinds": ["ConfigMap"]}, "subjects": list(subjects)}]}}


REFUSED = [
    (policy(admission=False, background=False), "disabling both admission and background processing is not allowed"),
    (policy(admission=False, rule={"name": "m", "match": RULE["match"],
                                   "mutate": {"patchStrategicMerge": {"metadata": {"labels": {"a": "b"}}}}}),
     "disabling admission processing is only allowed with validation policies"),
    (policy(webhookTimeoutSeconds=31), "spec.webhookTimeoutSeconds: Invalid value: 31: the timeout value must be"),
    (policy(webhookConfiguration={"timeoutSeconds": -1}), "spec.webhookConfiguration.timeoutSeconds: Invalid value: -1"),
    (policy(kind="Policy", validationFailureActionOverrides=[{"action": "Enforce", "namespaces": ["team"]}]),
     "is supported only with ClusterPolicy"),
    (policy(rule={**RULE, "celPreconditions": [{"name": "c", "expression": "true"}]}),
     "spec.rules[0].celPreconditions: Forbidden: celPrecondition can only be used with validate.cel"),
    (policy(rule=kinds("Scale")), "spec.rules[0].match.any[0].kinds: background scan enabled with subresource Scale"),
    (policy(rule=kinds("Pod/scale")), "background scan enabled with subresource Pod/scale"),
    (policy(rule=kinds("Pod/*")), "background scan enabled with subresource Pod/*"),
    (policy(rule=kinds("*/*")), "background scan enabled with subresource */*"),
    (policy(kind="Policy", rule=kinds("*/status")), "background scan enabled with subresource */status"),
    (policy(background=False, rule=with_subjects({"kind": "Foo", "name": "foo"})),
     "subjects[0].kind: Invalid value: 'Foo': kind must be 'User', 'Group', or 'ServiceAccount'"),
    (policy(background=False, rule=with_subjects({"kind": "ServiceAccount", "name": "ci"})),
     "subjects[0].namespace: Required value: namespace is required when Kind is ServiceAccount"),
    (policy(background=False, rule=with_subjects({"kind": "User"})), "subjects[0].name: Required value"),
]


@pytest.mark.parametrize("doc, message", REFUSED, ids=[m[:40] for _, m in REFUSED])
def test_what_kyverno_refuses_is_refused_with_its_words(doc, message):
    with pytest.raises(PolicyError) as refused:
        compile_policy(doc)
    assert message in str(refused.value)
    assert str(refused.value).startswith("p: ")  # the policy is named


@pytest.mark.parametrize("doc", [
    policy(),
    policy(admission=False),  # a background-only validation policy
    policy(background=False, rule=kinds("Pod/exec")),  # subresources in admission only
    policy(rule=kinds("batch/*/CronJob", "apps/v1/Deployment")),  # group/version/Kind, no subresource
    policy(webhookTimeoutSeconds=30, webhookConfiguration={"timeoutSeconds": 1}),
    policy(background=False, rule=with_subjects({"kind": "ServiceAccount", "name": "ci", "namespace": "ci"},
                                                {"kind": "Group", "name": "admins"})),
    policy(rule={**RULE, "celPreconditions": [{"name": "c", "expression": "true"}],
                 "validate": {"failureAction": "Audit", "cel": {"expressions": [{"expression": "true"}]}}}),
])
def test_what_kyverno_accepts_still_loads(doc):
    assert compile_policy(doc, CelCompiler()).name == "p"
