"""Tenancy of Kyverno policy objects, replayed as a tenant would mount each attack (Kyverno's advisories
CVE-2024-48921, CVE-2026-22039, CVE-2026-41068): real AdmissionReviews to a running standalone `serve`.

A tenant writes every field of their own namespace's objects: a PolicyException there, a namespaced
`Policy` whose context entries and generate rules name other namespaces. None of it may reach past the
tenant's namespace (webhook/model/exception_trust.py, webhook/model/policy_scope.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.support import assert_valid_k8s, eventually, policy_dir, review, running_server

SECRET = "s3cr3t-0f-kube-system"

DISALLOW_PRIVILEGED = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: disallow-privileged}
spec:
  validationFailureAction: Enforce
  background: false
  rules:
  - name: privileged-containers
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      message: privileged containers are not allowed
      pattern:
        spec:
          containers:
          - =(securityContext):
              =(privileged): "false"
"""

# what a tenant of team-a writes: an exception for every Pod, wherever it is
TENANT_EXCEPTION = """\
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: my-bypass, namespace: team-a}
spec:
  exceptions:
  - {policyName: disallow-privileged, ruleNames: ["*"]}
  match: {any: [{resources: {kinds: [Pod]}}]}
"""


def pod(namespace: str, privileged: bool = False, name: str = "p") -> dict:
    container: dict = {"name": "c", "image": "nginx:1.27"}
    if privileged:
        container["securityContext"] = {"privileged": True}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [container]}}


def state_dir(tmp_path: Path) -> Path:
    """Two namespaces; kube-system holds what no tenant may read."""
    directory = tmp_path / "state"
    directory.mkdir()
    objects = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system",
                                                               "labels": {"secret-label": SECRET}}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "platform-secrets", "namespace": "kube-system"},
         "data": {"token": SECRET}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "team-a"},
         "data": {"token": "team-a-value"}},
    ]
    (directory / "objects.yaml").write_text(yaml.safe_dump_all(objects))
    return directory


# -- PolicyExceptions (CVE-2024-48921) ----------------------------------------------------------------------

async def test_a_tenants_exception_is_refused_unless_the_platform_allows_its_namespace(tmp_path):
    """The exception arrives while serving (a merged pull request, an edited ConfigMap): the edit is refused
    with the file and field, the previous policies keep serving, and kube-system's pods stay checked."""
    policies = policy_dir(tmp_path / "p", {"policy.yaml": DISALLOW_PRIVILEGED})
    async with running_server(policies, tmp_path, state=state_dir(tmp_path)) as server:
        (policies / "exception.yaml").write_text(TENANT_EXCEPTION)
        errors = await eventually(lambda: server.qm.store.status.errors)
        (error,) = errors
        assert (error.file, error.field) == ("exception.yaml", "metadata.namespace")
        assert "namespace team-a are not honoured" in error.message and "--exception-namespace" in error.message
        for namespace in ("kube-system", "team-a"):
            answer = await server.admit("/validate", review(pod(namespace, privileged=True)))
            assert answer["allowed"] is False, namespace
            assert "privileged containers are not allowed" in answer["status"]["message"]


async def test_an_allowed_namespaces_exception_exempts_only_its_own_namespace(tmp_path):
    policies = policy_dir(tmp_path / "p", {"policy.yaml": DISALLOW_PRIVILEGED, "exception.yaml": TENANT_EXCEPTION})
    async with running_server(policies, tmp_path, state=state_dir(tmp_path), exception_namespaces=("team-a",)) as server:
        own = await server.admit("/validate", review(pod("team-a", privileged=True)))
        assert own["allowed"] is True
        for namespace in ("kube-system", "default"):
            answer = await server.admit("/validate", review(pod(namespace, privileged=True)))
            assert answer["allowed"] is False, namespace


async def test_an_exception_names_a_namespaced_policy_by_namespace_and_name(tmp_path):
    """`policyName: disallow-privileged` names the ClusterPolicy, not team-b's Policy of the same name: an
    exception of team-a that names it bare does not lift team-b's own policy."""
    team_b = DISALLOW_PRIVILEGED.replace("kind: ClusterPolicy", "kind: Policy").replace(
        "{name: disallow-privileged}", "{name: disallow-privileged, namespace: team-b}")
    policies = policy_dir(tmp_path / "p", {"policy.yaml": team_b, "exception.yaml": TENANT_EXCEPTION})
    async with running_server(policies, tmp_path, state=state_dir(tmp_path), exception_namespaces=("*",)) as server:
        answer = await server.admit("/validate", review(pod("team-b", privileged=True)))
        assert answer["allowed"] is False


def test_apply_honours_no_tenant_exception_by_default(tmp_path, capsys):
    from webhook.cli import main

    policies = policy_dir(tmp_path / "p", {"policy.yaml": DISALLOW_PRIVILEGED, "exception.yaml": TENANT_EXCEPTION})
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(yaml.safe_dump(pod("kube-system", privileged=True)))
    assert main(["apply", "--policies", str(policies), str(manifest)]) == 2
    assert "field metadata.namespace: PolicyExceptions of namespace team-a are not honoured" in capsys.readouterr().err
    assert main(["apply", "--policies", str(policies), "--exception-namespace", "team-a", str(manifest)]) == 1
    manifest.write_text(yaml.safe_dump(pod("team-a", privileged=True)))
    assert main(["apply", "--policies", str(policies), "--exception-namespace", "team-a", str(manifest)]) == 0
    capsys.readouterr()


def test_a_namespace_flag_that_is_no_namespace_is_a_clear_error(tmp_path, capsys):
    from webhook.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["apply", "--policies", str(tmp_path), "--exception-namespace", "Team_A", "x.yaml"])
    assert exited.value.code == 2
    assert "--exception-namespace: 'Team_A' is not a namespace name" in capsys.readouterr().err


# -- lookups of a namespaced Policy (CVE-2026-22039, CVE-2026-41068) ---------------------------------------

def peeking_policy(context: str, message: str) -> str:
    return f"""\
apiVersion: kyverno.io/v1
kind: Policy
metadata: {{name: peek, namespace: team-a}}
spec:
  validationFailureAction: Enforce
  background: false
  rules:
  - name: leak
    match: {{any: [{{resources: {{kinds: [Pod]}}}}]}}
    context:
    - {context}
    validate:
      message: "{message}"
      deny: {{}}
"""


LEAKS = {
    "configMap of another namespace": ("{name: cm, configMap: {name: platform-secrets, namespace: kube-system}}",
                                       "token={{ cm.data.token }}"),
    "apiCall of another namespace": ("{name: cm, apiCall: {urlPath: /api/v1/namespaces/kube-system/configmaps/"
                                     "platform-secrets, jmesPath: data.token}}", "token={{ cm }}"),
    "apiCall listing every namespace": ("{name: cms, apiCall: {urlPath: /api/v1/configmaps, jmesPath: "
                                        "'items[].data.token'}}", "tokens={{ cms }}"),
    "apiCall of a cluster-scoped object": ("{name: ns, apiCall: {urlPath: /api/v1/namespaces/kube-system, "
                                           "jmesPath: metadata.labels}}", "labels={{ ns }}"),
    "apiCall with a path that climbs out": ("{name: cm, apiCall: {urlPath: '/api/v1/namespaces/team-a/../kube-system/"
                                            "configmaps/platform-secrets', jmesPath: data.token}}", "token={{ cm }}"),
}


@pytest.mark.parametrize("entry", LEAKS, ids=list(LEAKS))
async def test_a_namespaced_policy_reads_nothing_outside_its_namespace(tmp_path, entry):
    context, message = LEAKS[entry]
    policies = policy_dir(tmp_path / "p", {"policy.yaml": peeking_policy(context, message)})
    async with running_server(policies, tmp_path, state=state_dir(tmp_path)) as server:
        status, answer = await server.post("/validate", review(pod("team-a")))
        assert status == 200
        assert SECRET not in json.dumps(answer)
        assert answer["response"]["allowed"] is False  # the rule errors and its failure policy (Fail) decides


@pytest.mark.parametrize("context", ["{name: cm, configMap: {name: settings, namespace: team-a}}",
                                     "{name: cm, configMap: {name: settings}}",  # no namespace: the policy's own
                                     "{name: cm, apiCall: {urlPath: /api/v1/namespaces/team-a/configmaps/settings}}"])
async def test_a_namespaced_policy_still_reads_its_own_namespace(tmp_path, context):
    policies = policy_dir(tmp_path / "p", {"policy.yaml": peeking_policy(context, "token={{ cm.data.token }}")})
    async with running_server(policies, tmp_path, state=state_dir(tmp_path)) as server:
        answer = await server.admit("/validate", review(pod("team-a")))
        assert "token=team-a-value" in answer["status"]["message"]


# -- generate and clone of a namespaced Policy ----------------------------------------------------------------

def generating_policy(generate: str) -> str:
    return f"""\
apiVersion: kyverno.io/v1
kind: Policy
metadata: {{name: gen, namespace: team-a}}
spec:
  background: false
  rules:
  - name: make
    match: {{any: [{{resources: {{kinds: [Pod]}}}}]}}
    generate: {generate}
"""


ESCAPES = {
    "a quota of pods 0 in kube-system": (
        "{apiVersion: v1, kind: ResourceQuota, name: freeze, namespace: kube-system, "
        "data: {spec: {hard: {pods: '0'}}}}", ("ResourceQuota", "kube-system", "freeze")),
    "the namespace carried in data": (
        "{apiVersion: v1, kind: ResourceQuota, name: freeze, "
        "data: {metadata: {namespace: kube-system}, spec: {hard: {pods: '0'}}}}", ("ResourceQuota", "kube-system", "freeze")),
    "a cluster-scoped binding": (
        "{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRoleBinding, name: me-admin, "
        "data: {roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}, "
        "subjects: [{kind: User, name: jdoe@example.org, apiGroup: rbac.authorization.k8s.io}]}}",
        ("ClusterRoleBinding", "", "me-admin")),
    "a clone of another namespace's ConfigMap": (
        "{apiVersion: v1, kind: ConfigMap, name: stolen, namespace: team-a, "
        "clone: {namespace: kube-system, name: platform-secrets}}", ("ConfigMap", "team-a", "stolen")),
    "a cloneList over another namespace": (
        "{namespace: team-a, cloneList: {namespace: kube-system, kinds: [v1/ConfigMap]}}",
        ("ConfigMap", "team-a", "platform-secrets")),
}


@pytest.mark.parametrize("escape", ESCAPES, ids=list(ESCAPES))
async def test_a_namespaced_policy_generates_only_into_its_namespace(tmp_path, escape):
    generate, (kind, namespace, name) = ESCAPES[escape]
    policies = policy_dir(tmp_path / "p", {"policy.yaml": generating_policy(generate)})
    async with running_server(policies, tmp_path, state=state_dir(tmp_path)) as server:
        status, answer = await server.post("/validate", review(pod("team-a")))
        assert status == 200
        assert server.qm.state.get(kind, namespace, name) is None
        assert SECRET not in json.dumps(answer)


async def test_a_namespaced_policy_still_generates_into_its_own_namespace(tmp_path):
    generate = ("{apiVersion: v1, kind: ConfigMap, name: made, namespace: team-a, data: {data: {k: v}}}")
    policies = policy_dir(tmp_path / "p", {"policy.yaml": generating_policy(generate)})
    async with running_server(policies, tmp_path, state=state_dir(tmp_path)) as server:
        answer = await server.admit("/validate", review(pod("team-a")))
        assert answer["allowed"] is True
        made = server.qm.state.get("ConfigMap", "team-a", "made")
        assert made is not None and made["data"] == {"k": "v"}
        assert_valid_k8s(made)


async def test_an_allowed_exception_never_lifts_a_policy_off_the_namespace_object(tmp_path):
    """A Namespace's reviews name it as their namespace, but it is cluster-scoped: its labels choose the
    profile's quota class and whether admission applies, so a tenant's exception must not reach it (here a
    policy that keeps a label off namespaces)."""
    policy = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: frozen-namespaces}
spec:
  validationFailureAction: Enforce
  background: false
  rules:
  - name: no-label-changes
    match: {any: [{resources: {kinds: [Namespace]}}]}
    validate:
      message: namespace labels are the platform's
      deny:
        conditions:
          any:
          - key: "{{ request.object.metadata.labels.tier || '' }}"
            operator: NotEquals
            value: ""
"""
    exception = TENANT_EXCEPTION.replace("disallow-privileged", "frozen-namespaces").replace("[Pod]", "[Namespace]")
    policies = policy_dir(tmp_path / "p", {"policy.yaml": policy, "exception.yaml": exception})
    namespace = {"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": "team-a", "labels": {"tier": "platform"}}}
    old = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
    async with running_server(policies, tmp_path, state=state_dir(tmp_path), exception_namespaces=("team-a",)) as server:
        answer = await server.admit("/validate", review(namespace, operation="UPDATE", old=old, namespace="team-a"))
        assert answer["allowed"] is False and "namespace labels are the platform's" in answer["status"]["message"]


def test_report_scans_with_the_exceptions_serve_would_honour(tmp_path, capsys):
    from webhook.cli import main

    scanned = DISALLOW_PRIVILEGED.replace("background: false", "background: true")
    policies = policy_dir(tmp_path / "p", {"policy.yaml": scanned, "exception.yaml": TENANT_EXCEPTION})
    state = state_dir(tmp_path)
    (state / "pods.yaml").write_text(yaml.safe_dump_all([pod("team-a", privileged=True, name="own"),
                                                         pod("kube-system", privileged=True, name="system")]))
    assert main(["report", "--policies", str(policies), "--state", str(state), "-o", "json"]) == 2
    assert "namespace team-a are not honoured" in capsys.readouterr().err
    assert main(["report", "--policies", str(policies), "--state", str(state), "-o", "json",
                 "--exception-namespace", "team-a"]) == 0
    results = {(report["scope"]["name"], r["result"]) for report in json.loads(capsys.readouterr().out)["items"]
               for r in report.get("results", [])}
    assert results == {("own", "skip"), ("system", "fail")}
