"""Tenancy of Kyverno's CEL policy objects (policies.kyverno.io), replayed as a tenant would mount each
attack: real AdmissionReviews to a running standalone `serve`.

A PolicyException in a tenant's namespace, and a Namespaced*Policy whose `resource.Get/List` and
`generator.Apply` name other namespaces, reach nothing past the tenant's namespace
(webhook/model/exception_trust.py, webhook/model/policy_scope.py).
"""

from __future__ import annotations

import json

import pytest

from tests.families.cel.test_server import PRIVILEGED_POLICY, _pod
from tests.families.kyverno.test_tenancy import SECRET, state_dir
from tests.support import assert_valid_k8s, eventually, policy_dir, review, running_server

TENANT_EXCEPTION = """\
apiVersion: policies.kyverno.io/v1
kind: PolicyException
metadata: {name: my-bypass, namespace: team-a}
spec:
  policyRefs: [{name: disallow-privileged-containers, kind: ValidatingPolicy}]
  matchConditions: [{name: everything, expression: "true"}]
"""


def pod_in(namespace: str, privileged: bool) -> dict:
    obj = _pod("p", privileged)
    obj["metadata"]["namespace"] = namespace
    return obj


async def test_a_tenants_cel_exception_is_refused_unless_its_namespace_is_allowed(tmp_path):
    policies = policy_dir(tmp_path / "p", {"policy.yaml": PRIVILEGED_POLICY.format(action="Deny")})
    async with running_server(policies, tmp_path, state=state_dir(tmp_path)) as server:
        (policies / "exception.yaml").write_text(TENANT_EXCEPTION)
        (error,) = await eventually(lambda: server.qm.store.status.errors)
        assert (error.file, error.field) == ("exception.yaml", "metadata.namespace")
        for namespace in ("kube-system", "team-a"):
            answer = await server.admit("/validate", review(pod_in(namespace, True)))
            assert answer["allowed"] is False, namespace


async def test_an_allowed_cel_exception_exempts_only_its_own_namespace(tmp_path):
    policies = policy_dir(tmp_path / "p", {"policy.yaml": PRIVILEGED_POLICY.format(action="Deny"),
                                           "exception.yaml": TENANT_EXCEPTION})
    async with running_server(policies, tmp_path, state=state_dir(tmp_path), exception_namespaces=("*",)) as server:
        assert (await server.admit("/validate", review(pod_in("team-a", True))))["allowed"] is True
        assert (await server.admit("/validate", review(pod_in("kube-system", True))))["allowed"] is False


def peeking_policy(message_expression: str) -> str:
    return f"""\
apiVersion: policies.kyverno.io/v1
kind: NamespacedValidatingPolicy
metadata: {{name: peek, namespace: team-a}}
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - {{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}}
  validations:
  - expression: "false"
    messageExpression: >-
      {message_expression}
"""


LEAKS = {
    "resource.Get of another namespace":
        "'token=' + string(resource.Get('v1', 'configmaps', 'kube-system', 'platform-secrets').data.token)",
    "resource.List over every namespace":
        "'tokens=' + resource.List('v1', 'configmaps', '').items.map(i, i.data.token).join(',')",
    "resource.List of another namespace":
        "'tokens=' + resource.List('v1', 'configmaps', 'kube-system').items.map(i, i.data.token).join(',')",
    "resource.Get of a cluster-scoped object":
        "'label=' + resource.Get('v1', 'namespaces', '', 'kube-system').metadata.labels['secret-label']",
}


@pytest.mark.parametrize("leak", LEAKS, ids=list(LEAKS))
async def test_a_namespaced_cel_policy_reads_nothing_outside_its_namespace(tmp_path, leak):
    policies = policy_dir(tmp_path / "p", {"policy.yaml": peeking_policy(LEAKS[leak])})
    async with running_server(policies, tmp_path, state=state_dir(tmp_path)) as server:
        status, answer = await server.post("/validate", review(pod_in("team-a", False)))
        assert status == 200
        assert SECRET not in json.dumps(answer)


async def test_a_namespaced_cel_policy_still_reads_its_own_namespace(tmp_path):
    expression = "'token=' + string(resource.Get('v1', 'configmaps', 'team-a', 'settings').data.token)"
    policies = policy_dir(tmp_path / "p", {"policy.yaml": peeking_policy(expression)})
    async with running_server(policies, tmp_path, state=state_dir(tmp_path)) as server:
        answer = await server.admit("/validate", review(pod_in("team-a", False)))
        assert "token=team-a-value" in answer["status"]["message"]


def generating_policy(expression: str) -> str:
    return f"""\
apiVersion: policies.kyverno.io/v1
kind: NamespacedGeneratingPolicy
metadata: {{name: gen, namespace: team-a}}
spec:
  matchConstraints:
    resourceRules:
    - {{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}}
  generate:
  - expression: >-
      {expression}
"""


QUOTA = ('[{"apiVersion": dyn("v1"), "kind": dyn("ResourceQuota"), "metadata": dyn({"name": "freeze"}), '
         '"spec": dyn({"hard": dyn({"pods": "0"})})}]')
ESCAPES = {
    "a quota of pods 0 in kube-system": (f"generator.Apply('kube-system', {QUOTA})",
                                         ("ResourceQuota", "kube-system", "freeze")),
    "the namespace carried in the object": (
        'generator.Apply("", [{"apiVersion": dyn("v1"), "kind": dyn("ResourceQuota"), "metadata": '
        'dyn({"name": "freeze", "namespace": "kube-system"}), "spec": dyn({"hard": dyn({"pods": "0"})})}])',
        ("ResourceQuota", "kube-system", "freeze")),
    "a cluster-scoped binding": (
        'generator.Apply("", [{"apiVersion": dyn("rbac.authorization.k8s.io/v1"), "kind": dyn("ClusterRoleBinding"), '
        '"metadata": dyn({"name": "me-admin"}), "roleRef": dyn({"apiGroup": "rbac.authorization.k8s.io", '
        '"kind": "ClusterRole", "name": "cluster-admin"}), "subjects": dyn([{"kind": "User", '
        '"name": "jdoe@example.org", "apiGroup": "rbac.authorization.k8s.io"}])}])',
        ("ClusterRoleBinding", "", "me-admin")),
    "a clone of another namespace's ConfigMap": (
        "generator.Apply('team-a', [resource.Get('v1', 'configmaps', 'kube-system', 'platform-secrets')])",
        ("ConfigMap", "team-a", "platform-secrets")),
}


@pytest.mark.parametrize("escape", ESCAPES, ids=list(ESCAPES))
async def test_a_namespaced_generating_policy_generates_only_into_its_namespace(tmp_path, escape):
    expression, (kind, namespace, name) = ESCAPES[escape]
    policies = policy_dir(tmp_path / "p", {"policy.yaml": generating_policy(expression)})
    async with running_server(policies, tmp_path, state=state_dir(tmp_path)) as server:
        status, answer = await server.post("/validate", review(pod_in("team-a", False)))
        assert status == 200
        assert server.qm.state.get(kind, namespace, name) is None
        assert SECRET not in json.dumps(answer)


async def test_a_namespaced_generating_policy_still_generates_into_its_namespace(tmp_path):
    policies = policy_dir(tmp_path / "p", {"policy.yaml": generating_policy(f"generator.Apply('team-a', {QUOTA})")})
    async with running_server(policies, tmp_path, state=state_dir(tmp_path)) as server:
        assert (await server.admit("/validate", review(pod_in("team-a", False))))["allowed"] is True
        made = server.qm.state.get("ResourceQuota", "team-a", "freeze")
        assert made is not None
        assert_valid_k8s(made)


BROKEN_TENANT_POLICY = """\
apiVersion: policies.kyverno.io/v1
kind: NamespacedValidatingPolicy
metadata: {name: typo, namespace: team-a}
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "generator.apply(object) == true"
"""


async def test_a_tenants_broken_policy_answers_for_its_own_namespace_only(tmp_path):
    """A policy that does not compile is served with its failure policy (Fail: a denial). Found by Kyverno's
    chainsaw tests: a tenant's NamespacedGeneratingPolicy that did not compile denied every request of the
    cluster, other tenants' pods and the creation of namespaces among them."""
    policies = policy_dir(tmp_path / "p", {"policy.yaml": BROKEN_TENANT_POLICY})
    async with running_server(policies, tmp_path, state=state_dir(tmp_path)) as server:
        assert server.qm.store.status.broken, "the policy is served broken, as the chainsaw run found it"
        answer = await server.admit("/validate", review(pod_in("team-a", False)))
        assert answer["allowed"] is False and "does not compile" in answer["status"]["message"]
        for namespace in ("team-b", "kube-system"):
            assert (await server.admit("/validate", review(pod_in(namespace, False))))["allowed"] is True, namespace
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-c"}}
        assert (await server.admit("/validate", review(namespace)))["allowed"] is True
