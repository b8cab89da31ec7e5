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


EXCEPTION = {"apiVersion": "kyverno.io/v2", "kind": "PolicyException", "metadata": {"name": "e", "namespace": "ns"},
             "spec": {"exceptions": [{"policyName": "psa", "ruleNames": ["restricted"]}],
                      "match": {"all": [{"resources": {"kinds": ["Pod"]}}]}}}


@pytest.mark.parametrize("entries, messages", [
    ([{"controlName": "Capabilities"}, {"controlName": "Seccomp"}, {"controlName": "Privilege Escalation"}],
     ["spec.podSecurity[0].controlName: Invalid value: 'Capabilities': exclude.images must be specified",
      "spec.podSecurity[2].controlName: Invalid value: 'Privilege Escalation'"]),
    ([{"controlName": "HostPath Volumes", "images": ["nginx"]}], ["exclude.images must not be specified for the pod"]),
    ([{"controlName": "/proc Mount Type", "images": ["nginx"], "restrictedField": "spec.containers[*].x"}],
     ["spec.podSecurity[0].values: Forbidden: values is required"]),
    ([{"controlName": "Seccomp", "values": ["Unconfined"]}],
     ["spec.podSecurity[0].restrictedField: Forbidden: restrictedField is required"]),
])
def test_an_exceptions_pod_security_entries_are_checked_as_kyverno_checks_them(entries, messages):
    from webhook.families.kyverno.exceptions import ExceptionError, compile_exception

    with pytest.raises(ExceptionError) as refused:
        compile_exception({**EXCEPTION, "spec": {**EXCEPTION["spec"], "podSecurity": entries}})
    for message in messages:
        assert message in str(refused.value)


def test_a_rules_pod_security_exclusions_are_checked_with_their_path():
    rule = {**RULE, "validate": {"podSecurity": {"level": "baseline", "exclude": [
        {"controlName": "HostPath Volumes", "restrictedField": "spec.volumes[*].hostPath"}]}}}
    with pytest.raises(PolicyError, match=r"spec\.rules\[0\]\.podSecurity\.exclude\[0\]\.values: Forbidden: values is"):
        compile_policy(policy(rule=rule))
