"""Kyverno's security advisories that apply to what Quartermaster implements, replayed against a running
standalone `serve` with real AdmissionReviews (docs/security.md, "Kyverno's advisories", lists them all,
with those that do not apply and why). The tenancy advisories (CVE-2024-48921, CVE-2026-22039,
CVE-2026-41068, GHSA-79gf-7frw-68m9) are replayed in families/kyverno/test_tenancy.py, families/cel/test_tenancy.py
and kube/test_policy_tenancy_live.py."""

from __future__ import annotations

import json
import socket
import threading

import pytest

from tests.support import policy_dir, review, running_server


def configmap(**meta) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "team-a", **meta},
            "data": {"a": "b"}}


def cluster_policy(rule: str, name: str = "p") -> str:
    return f"""\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {{name: {name}}}
spec:
  validationFailureAction: Enforce
  background: false
  rules:
  - name: r
{rule}"""


async def answered(server, path: str, body: dict) -> dict:
    """The review is answered (not a dropped connection, not a 500) and the server stays alive."""
    status, answer = await server.post(path, body)
    assert status == 200, answer
    assert (await server.get("/healthz"))[0] == 200
    return answer["response"]


async def test_cve_2023_33191_seccomp_unconfined_fails_pod_security_baseline(tmp_path):
    policy = cluster_policy("""\
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      podSecurity: {level: baseline, version: latest}
""")
    pods = [{"securityContext": {"seccompProfile": {"type": "Unconfined"}}, "containers": [{"name": "c", "image": "x"}]},
            {"containers": [{"name": "c", "image": "x", "securityContext": {"seccompProfile": {"type": "Unconfined"}}}]}]
    async with running_server(policy_dir(tmp_path / "p", {"p.yaml": policy}), tmp_path) as server:
        for spec in pods:
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team-a"}, "spec": spec}
            response = await answered(server, "/validate", review(pod))
            assert response["allowed"] is False and "seccomp" in response["status"]["message"].lower()


async def test_cve_2023_34091_an_object_being_deleted_is_still_checked(tmp_path):
    """A finalizer keeps the object with a deletionTimestamp; its UPDATEs must not skip policies."""
    policy = cluster_policy("""\
    match: {any: [{resources: {kinds: [ConfigMap]}}]}
    validate:
      message: a team label is required
      pattern: {metadata: {labels: {team: "?*"}}}
""")
    pending = {"finalizers": ["example.org/hold"], "deletionTimestamp": "2026-01-01T00:00:00Z"}
    async with running_server(policy_dir(tmp_path / "p", {"p.yaml": policy}), tmp_path) as server:
        response = await answered(server, "/validate", review(configmap(**pending), operation="UPDATE",
                                                              old=configmap(labels={"team": "a"}, **pending)))
        assert response["allowed"] is False and "a team label is required" in response["status"]["message"]


async def test_ghsa_r5p3_955p_5ggq_a_variable_through_an_unknown_function_is_no_crash(tmp_path):
    policy = cluster_policy("""\
    match: {any: [{resources: {kinds: [ConfigMap]}}]}
    validate:
      message: m
      pattern: {metadata: {labels: {team: "{{@ | non_existent_function }}"}}}
""")
    async with running_server(policy_dir(tmp_path / "p", {"p.yaml": policy}), tmp_path) as server:
        assert (await answered(server, "/validate", review(configmap())))["allowed"] is False


async def test_ghsa_r2rj_wwm5_x6mq_context_entries_that_double_are_bounded(tmp_path):
    """l0 is 1,000 characters and each next entry joins the last twice: l30 would be a terabyte (the process
    was killed); the entries stop at the context's bound and the rule errors."""
    entries = ["    - {name: l0, variable: {jmesPath: \"random('[a-z]{1000}')\"}}"] + [
        f"    - {{name: l{i}, variable: {{jmesPath: \"join('', [l{i - 1}, l{i - 1}])\"}}}}" for i in range(1, 31)]
    policy = cluster_policy("    match: {any: [{resources: {kinds: [ConfigMap]}}]}\n    context:\n" + "\n".join(entries)
                            + "\n    validate:\n      message: \"{{ length(l30) }}\"\n      deny: {}\n")
    async with running_server(policy_dir(tmp_path / "p", {"p.yaml": policy}), tmp_path) as server:
        response = await answered(server, "/validate", review(configmap()))
        assert response["allowed"] is False
        assert "context entries would hold more than" in response["status"]["message"]


async def test_ghsa_r2rj_wwm5_x6mq_one_join_is_bounded_too(tmp_path):
    entries = ["    - {name: l0, variable: {jmesPath: \"random('[a-z]{4000}')\"}}",
               "    - {name: big, variable: {jmesPath: \"join('', [" + ", ".join(["l0"] * 3000) + "])\"}}"]
    policy = cluster_policy("    match: {any: [{resources: {kinds: [ConfigMap]}}]}\n    context:\n" + "\n".join(entries)
                            + "\n    validate:\n      message: \"{{ length(big) }}\"\n      deny: {}\n")
    async with running_server(policy_dir(tmp_path / "p", {"p.yaml": policy}), tmp_path) as server:
        response = await answered(server, "/validate", review(configmap()))
        assert "join: the result would hold more than" in response["status"]["message"]


async def test_ghsa_fpjq_c37h_cqcv_a_foreach_patch_that_resolves_to_nothing_is_an_error(tmp_path):
    policy = cluster_policy("""\
    match: {any: [{resources: {kinds: [ConfigMap]}}]}
    mutate:
      foreach:
      - list: "request.object.data | keys(@)"
        patchesJson6902: "{{ request.object.metadata.annotations.nothing }}"
""")
    async with running_server(policy_dir(tmp_path / "p", {"p.yaml": policy}), tmp_path) as server:
        response = await answered(server, "/mutate", review(configmap()))
        assert response["allowed"] is False and "foreach element 0" in response["status"]["message"]


async def test_ghsa_gg4x_fgg2_h9w9_an_exception_of_single_pod_security_controls_exempts_only_those(tmp_path):
    """An exception meant for one control (here: a hostPath of /var/log) lifts exactly that: another path, or
    another control the pod also fails, still fails the rule; two such exceptions lift what each names."""
    policy = cluster_policy("""\
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      podSecurity: {level: baseline, version: latest}
""", name="psa")

    def exception(name: str, control: str) -> str:
        return f"""\
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {{name: {name}, namespace: platform}}
spec:
  exceptions: [{{policyName: psa, ruleNames: [r]}}]
  match: {{any: [{{resources: {{kinds: [Pod]}}}}]}}
  podSecurity: [{control}]
"""
    host_path = '{controlName: HostPath Volumes, restrictedField: "spec.volumes[*].hostPath", values: [/var/log]}'
    host_ports = "{controlName: Host Ports, images: [registry.example.org/agent*]}"
    policies = policy_dir(tmp_path / "p", {"p.yaml": policy, "e1.yaml": exception("host-path-only", host_path),
                                           "e2.yaml": exception("agent-ports", host_ports)})

    def pod(path: str, image: str = "registry.example.org/agent:1", privileged: bool = False, port: int = 0) -> dict:
        container = {"name": "c", "image": image, "securityContext": {"privileged": privileged},
                     "ports": [{"containerPort": 80, "hostPort": port}] if port else []}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "platform"},
                "spec": {"containers": [container], "volumes": [{"name": "v", "hostPath": {"path": path}}]}}

    async with running_server(policies, tmp_path, exception_namespaces=("platform",)) as server:
        exempted = await answered(server, "/validate", review(pod("/var/log", port=8080)))
        assert exempted["allowed"] is True  # each control it fails is named by one of the two exceptions
        for denied_pod, control in ((pod("/etc"), "HostPath"), (pod("/var/log", privileged=True), "Privileged"),
                                    (pod("/var/log", image="docker.io/other:1", port=8080), "Host Ports")):
            response = await answered(server, "/validate", review(denied_pod))
            assert response["allowed"] is False, denied_pod
            assert control in response["status"]["message"], response["status"]["message"]


class Listener:
    """A TCP port that counts who connects: where a policy's HTTP call would go."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop = True
        self._thread.join()
        self.sock.close()


@pytest.fixture
def listener():
    found = Listener()
    yield found
    found.close()


async def test_ghsa_rggm_jjmc_3394_a_namespaced_policy_makes_no_http_request(tmp_path, listener):
    url = f"http://127.0.0.1:{listener.port}/latest/meta-data"
    cel = f"""\
apiVersion: policies.kyverno.io/v1
kind: NamespacedValidatingPolicy
metadata: {{name: fetch, namespace: team-a}}
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - {{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}}
  validations:
  - expression: "false"
    messageExpression: "string(http.Get('{url}'))"
"""
    kyverno = cluster_policy(f"""\
    match: {{any: [{{resources: {{kinds: [ConfigMap]}}}}]}}
    context:
    - {{name: meta, apiCall: {{method: GET, service: {{url: '{url}'}}}}}}
    validate:
      message: "{{{{ meta }}}}"
      deny: {{}}
""").replace("kind: ClusterPolicy\nmetadata: {name: p}", "kind: Policy\nmetadata: {name: p, namespace: team-a}")
    policies = policy_dir(tmp_path / "p", {"cel.yaml": cel, "kyverno.yaml": kyverno})
    async with running_server(policies, tmp_path) as server:
        response = await answered(server, "/validate", review(configmap()))
        assert response["allowed"] is False
    assert listener.connections == 0
    assert json.dumps(response).count("HTTP") >= 1  # each says it made no call
