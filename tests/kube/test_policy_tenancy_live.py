"""Tenancy of Kyverno policy objects in live mode: what a tenant applies with kubectl in their own namespace
(a PolicyException, a namespaced Policy) reaches nothing past it, against the test API server."""

from __future__ import annotations

import json
from dataclasses import replace

from tests.families.cel.test_fused import named, policy
from tests.kube.conftest import FAST
from tests.kube.objects import namespace
from tests.families.kyverno.test_tenancy import DISALLOW_PRIVILEGED, SECRET, TENANT_EXCEPTION, generating_policy, \
    peeking_policy, pod
from tests.support import eventually, policy_dir, review, running_server

import yaml


def live(kubeconfig):
    return replace(FAST, kubeconfig=kubeconfig, policy_object_groups=("kyverno.io",))


def seed(apiserver) -> None:
    apiserver.put(namespace("team-a"))
    kube_system = namespace("kube-system", profile=False)
    kube_system["metadata"]["labels"]["secret-label"] = SECRET
    apiserver.put(kube_system)


def loaded(server, kind: str, name: str) -> bool:
    return any((p.id.kind, p.id.name) == (kind, name) for p in server.qm.store.snapshot.policies)


def exception_ready(apiserver):
    obj = apiserver.get("kyverno.io/v2", "PolicyException", "team-a", "my-bypass") or {}
    conditions = (obj.get("status") or {}).get("conditions") or []
    return conditions[0] if conditions else None


async def test_a_tenants_exception_object_exempts_nothing_beyond_its_namespace(apiserver, kubeconfig, tmp_path):
    seed(apiserver)
    apiserver.put(yaml.safe_load(TENANT_EXCEPTION))  # kubectl apply -n team-a, by the tenant
    policies = policy_dir(tmp_path / "p", {"policy.yaml": DISALLOW_PRIVILEGED})
    async with running_server(policies, tmp_path, live=live(kubeconfig)) as server:
        await eventually(lambda: server.qm.state.synced)
        refused = await eventually(lambda: exception_ready(apiserver))  # the tenant is told, on the object
        assert refused["status"] == "False" and "namespace team-a are not honoured" in refused["message"]
        for namespace_name in ("kube-system", "team-a"):
            answer = await server.admit("/validate", review(pod(namespace_name, privileged=True)))
            assert answer["allowed"] is False, namespace_name
    apiserver.put({**yaml.safe_load(TENANT_EXCEPTION), "status": {}})
    async with running_server(policies, tmp_path / "allowed", live=live(kubeconfig),
                              exception_namespaces=("team-a",)) as server:
        await eventually(lambda: server.qm.state.synced)
        await eventually(lambda: (exception_ready(apiserver) or {}).get("status") == "True")
        assert (await server.admit("/validate", review(pod("team-a", privileged=True))))["allowed"] is True
        assert (await server.admit("/validate", review(pod("kube-system", privileged=True))))["allowed"] is False


async def test_a_tenants_policy_object_generates_nothing_in_kube_system(apiserver, kubeconfig, tmp_path):
    seed(apiserver)
    policy = yaml.safe_load(generating_policy(
        "{apiVersion: v1, kind: ResourceQuota, name: freeze, namespace: kube-system, data: {spec: {hard: {pods: '0'}}}}"))
    apiserver.put(policy)
    policies = policy_dir(tmp_path / "p", {})
    async with running_server(policies, tmp_path, live=live(kubeconfig)) as server:
        await eventually(lambda: server.qm.state.synced and loaded(server, "Policy", "gen"))
        await server.post("/validate", review(pod("team-a")))
        assert apiserver.get("v1", "ResourceQuota", "kube-system", "freeze") is None
        assert apiserver.seen("POST", "resourcequotas") == []


async def test_a_tenants_policy_object_reads_no_cluster_scoped_object(apiserver, kubeconfig, tmp_path):
    seed(apiserver)
    apiserver.put(yaml.safe_load(peeking_policy(
        "{name: ns, apiCall: {urlPath: /api/v1/namespaces/kube-system, jmesPath: metadata.labels}}", "labels={{ ns }}")))
    policies = policy_dir(tmp_path / "p", {})
    async with running_server(policies, tmp_path, live=live(kubeconfig)) as server:
        await eventually(lambda: server.qm.state.synced and loaded(server, "Policy", "peek"))
        status, answer = await server.post("/validate", review(pod("team-a")))
        assert status == 200 and SECRET not in json.dumps(answer)


CEL_POLICY = named("exclude-images", policy("""\
    - expression: >-
        object.spec.containers.all(c, string(c.image) in exceptions.allowedImages ||
          c.?securityContext.?allowPrivilegeEscalation.orValue(true) == false)
      message: privilege escalation only for the allowed images"""))
CEL_EXCEPTION = {"apiVersion": "policies.kyverno.io/v1", "kind": "PolicyException",
                 "metadata": {"name": "tools", "namespace": "team-a"},
                 "spec": {"policyRefs": [{"name": "exclude-images", "kind": "ValidatingPolicy"}],
                          "images": ["registry.example.org/tools:1"]}}


def escalating_pod(namespace_name: str, image: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": namespace_name},
            "spec": {"containers": [{"name": "c", "image": image, "securityContext": {"allowPrivilegeEscalation": True}}]}}


async def test_a_cel_policy_exception_object_is_read_and_exempts_its_namespace_only(apiserver, kubeconfig, tmp_path):
    """policies.kyverno.io PolicyExceptions applied with kubectl were never watched (Kyverno's chainsaw
    validating-policies/exceptions): `exceptions.allowedImages` stayed empty and the pod was denied."""
    seed(apiserver)
    apiserver.put(namespace("team-b"))
    apiserver.put(CEL_EXCEPTION)
    policies = policy_dir(tmp_path / "p", {"policy.yaml": CEL_POLICY})
    settings = replace(FAST, kubeconfig=kubeconfig, policy_object_groups=("policies.kyverno.io",))
    async with running_server(policies, tmp_path, live=settings, exception_namespaces=("*",)) as server:
        await eventually(lambda: server.qm.state.synced)
        await eventually(lambda: loaded(server, "ValidatingPolicy", "exclude-images"))

        async def exempted() -> bool:
            answer = await server.admit("/validate", review(escalating_pod("team-a", "registry.example.org/tools:1")))
            return answer["allowed"] is True
        await eventually(exempted, message="the exception object was not applied")
        for namespace_name, image in (("team-b", "registry.example.org/tools:1"), ("team-a", "registry.example.org/other:1")):
            answer = await server.admit("/validate", review(escalating_pod(namespace_name, image)))
            assert answer["allowed"] is False, (namespace_name, image)
