"""Pod Security Standards checks and Kyverno's exclude entries."""

from webhook.families.kyverno.podsecurity import compile_pod_security
from webhook.families.kyverno.rule_env import RuleEnv
from webhook.families.kyverno.rule_types import RuleRef
from webhook.model.results import PolicyId

REF = RuleRef(PolicyId("kyverno.io/v1", "ClusterPolicy", "p"), "r")


def _pod(container, **spec):
    return {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [container], **spec}}


PRIV = _pod({"name": "c", "image": "nginx", "securityContext": {"privileged": True}})
RESTRICTED_OK = _pod({"name": "c", "image": "nginx", "securityContext": {
    "allowPrivilegeEscalation": False, "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"}}})


def test_baseline_denies_privileged_and_host_namespaces():
    check = compile_pod_security({"level": "baseline", "version": "latest"})
    assert [v.control for v in check.violations(PRIV)] == ["Privileged Containers"]
    host = _pod({"name": "c", "image": "nginx"}, hostNetwork=True)
    assert [v.control for v in check.violations(host)] == ["Host Namespaces"]
    assert check.check(REF, None, RuleEnv(), RESTRICTED_OK).outcome == "pass"


def test_restricted_needs_the_hardened_fields():
    check = compile_pod_security({"level": "restricted", "version": "latest"})
    assert check.violations(RESTRICTED_OK) == []
    controls = {v.control for v in check.violations(_pod({"name": "c", "image": "nginx"}))}
    assert controls == {"Privilege Escalation", "Running as Non-root", "Seccomp", "Capabilities"}


def test_exclude_by_control_and_image():
    check = compile_pod_security({"level": "baseline", "exclude": [
        {"controlName": "Privileged Containers", "images": ["nginx*"]}]})
    assert check.check(REF, None, RuleEnv(), PRIV).outcome == "pass"
    other = compile_pod_security({"level": "baseline", "exclude": [
        {"controlName": "Privileged Containers", "images": ["redis*"]}]})
    assert other.check(REF, None, RuleEnv(), PRIV).outcome == "fail"


def test_deployment_template_is_checked():
    deployment = {"kind": "Deployment", "spec": {"template": {"metadata": {}, "spec": PRIV["spec"]}}}
    assert compile_pod_security({"level": "baseline"}).check(REF, None, RuleEnv(), deployment).outcome == "fail"
