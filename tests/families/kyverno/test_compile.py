"""Load-time checks: unsupported features and malformed rules name the rule and the feature."""

import pytest

from webhook.families.kyverno.compile import PolicyError, compile_policy
from webhook.families.kyverno.podsecurity import compile_pod_security


def _doc(rule, **spec):
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"},
            "spec": {"rules": [rule], **spec}}


MATCH = {"any": [{"resources": {"kinds": ["Pod"]}}]}


@pytest.mark.parametrize("rule,message", [
    ({"name": "v", "match": MATCH, "verifyImages": [{"imageReferences": ["*"]}]}, "rule v: verifyImages is not supported"),
    ({"name": "m", "match": MATCH, "validate": {"manifests": {"attestors": []}}}, "rule m: validate.manifests"),
    ({"name": "t", "match": MATCH, "mutate": {"targets": [{"kind": "Secret"}], "patchStrategicMerge": {}}},
     "rule t: mutate.targets"),
    ({"name": "o", "match": MATCH, "validate": {"deny": {"conditions": {"all": [{"key": "a", "operator": "Like",
                                                                                   "value": "b"}]}}}},
     "unknown condition operator 'Like'"),
    ({"name": "x", "match": MATCH}, "needs exactly one of validate, mutate, generate"),
])
def test_unsupported_and_malformed_rules(rule, message):
    with pytest.raises(PolicyError, match=message):
        compile_policy(_doc(rule))


def test_failure_action_is_case_insensitive_and_validated():
    rule = {"name": "r", "match": MATCH, "validate": {"pattern": {"metadata": {"name": "*"}}}}
    assert compile_policy(_doc(rule, validationFailureAction="enforce")).rules[0].action == "Enforce"
    with pytest.raises(PolicyError, match="Audit or Enforce"):
        compile_policy(_doc(rule, validationFailureAction="Block"))


def test_pod_security_levels():
    assert compile_pod_security({"level": "restricted", "version": "latest"}).level == "restricted"
    with pytest.raises(ValueError, match="level"):
        compile_pod_security({"level": "strict"})
