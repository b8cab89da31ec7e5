"""CEL policies on a running `serve`: real AdmissionReviews over HTTPS, standalone state."""

import gc
import json

from tests.families.cel.test_fused_group import Compiles
from tests.support import apply_patch, assert_valid_k8s, decode_patch, eventually, review, running_server
from webhook.app import Quartermaster, Settings
from webhook.families.cel.base import CelPolicy
from webhook.model.review import parse_review
from webhook.reports.sink import MemoryResultSink
from webhook.state.memory import InMemoryClusterState

PRIVILEGED_POLICY = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: disallow-privileged-containers
  annotations:
    policies.kyverno.io/severity: high
spec:
  validationActions: [{action}]
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [pods]
  variables:
  - name: allContainers
    expression: >-
      object.spec.containers + object.spec.?initContainers.orValue([]) + object.spec.?ephemeralContainers.orValue([])
  validations:
  - expression: >-
      variables.allContainers.all(c, !c.?securityContext.?privileged.orValue(false))
    message: Privileged mode is disallowed. The fields spec.containers[*].securityContext.privileged must be unset or false.
"""


def _pod(name: str, privileged: bool) -> dict:
    container = {"name": "app", "image": "nginx:1.27"}
    if privileged:
        container["securityContext"] = {"privileged": True}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "team-a"},
            "spec": {"containers": [container]}}


def _write(tmp_path, name, text):
    directory = tmp_path / name
    directory.mkdir()
    (directory / "policy.yaml").write_text(text)
    return directory


async def test_enforced_validating_policy_denies_a_privileged_pod(tmp_path):
    policies = _write(tmp_path, "policies", PRIVILEGED_POLICY.format(action="Deny"))
    async with running_server(policies, tmp_path) as server:
        denied = await server.admit("/validate", review(_pod("root", True)))
        assert denied["allowed"] is False
        assert denied["status"]["code"] == 403 and denied["status"]["reason"] == "Forbidden"
        assert denied["status"]["message"].startswith("[disallow-privileged-containers] Privileged mode is disallowed")
        allowed = await server.admit("/validate", review(_pod("plain", False)))
        assert allowed["allowed"] is True and "warnings" not in allowed


async def test_audited_validating_policy_warns_and_reports(tmp_path):
    policies = _write(tmp_path, "policies", PRIVILEGED_POLICY.format(action="Audit"))
    async with running_server(policies, tmp_path, sink=MemoryResultSink()) as server:
        response = await server.admit("/validate", review(_pod("root", True)))
        assert response["allowed"] is True
        assert any("Privileged mode is disallowed" in w for w in response["warnings"])
        assert response["auditAnnotations"]
        entries = [e for e in server.qm.sink.entries if e.result.policy.name == "disallow-privileged-containers"]
        assert [(e.resource.name, e.result.outcome.value) for e in entries] == [("root", "fail")]
        assert entries[0].result.policy.kind == "ValidatingPolicy"


async def test_a_standalone_process_keeps_no_history_of_results(tmp_path):
    """Standalone has no PolicyReports to write: an audited failure reaches the user (warning, annotation) and
    leaves nothing behind. A buffer of the latest results made each admission's outlive young collections,
    which then walked them all (pauses of ~3 ms, and ~20 ms full collections, at 1,000 req/s)."""
    qm = Quartermaster.build(Settings(policies=_write(tmp_path, "policies", PRIVILEGED_POLICY.format(action="Audit"))),
                             state=InMemoryClusterState([]))
    qm.load_policies()

    async def admissions(count: int) -> int:
        for _ in range(count):
            verdict = await qm.engine.validate(parse_review(json.dumps(review(_pod("root", True))).encode()))
            assert verdict.allowed and any("Privileged mode is disallowed" in w for w in verdict.warnings)
        gc.collect()
        return len(gc.get_objects())

    await admissions(50)  # caches and lazily built plans settle
    settled = await admissions(50)
    assert qm.sink is None
    assert await admissions(1000) - settled < 100  # with the buffer: ~5,000 more


def _groups(qm):
    return list({id(p.route.group): p.route.group for p in qm.store.snapshot.policies
                 if isinstance(p, CelPolicy) and p.route.group is not None}.values())


async def test_served_policies_are_compiled_before_their_first_request(tmp_path, monkeypatch):
    """`serve` builds the CEL family's joined programs (and every member's) when it loads policies, at start
    and on each reload, in the loading thread: the first pod after either compiles nothing on the event loop."""
    compiles = Compiles(monkeypatch)
    both = "---\n".join([PRIVILEGED_POLICY.format(action="Deny"),
                          PRIVILEGED_POLICY.format(action="Deny").replace("name: disallow-privileged-containers",
                                                                          "name: second-opinion")])
    policies = _write(tmp_path, "policies", both)
    async with running_server(policies, tmp_path) as server:
        assert [len(group.members) for group in _groups(server.qm)] == [2]
        status, text = await server.get("/readyz")  # the routes, counted
        assert status == 200 and json.loads(text)["policyRoutes"] == {"fused-group": 2}
        compiles.count = 0
        assert (await server.admit("/validate", review(_pod("plain", False))))["allowed"] is True
        assert not (await server.admit("/validate", review(_pod("root", True))))["allowed"]
        assert compiles.count == 0
        generation = server.qm.store.snapshot.generation
        (policies / "policy.yaml").write_text(both + "---\n" + PRIVILEGED_POLICY.format(action="Audit").replace(
            "name: disallow-privileged-containers", "name: third-opinion"))
        await eventually(lambda: server.qm.store.snapshot.generation > generation)
        assert [len(group.members) for group in _groups(server.qm)] == [3]
        compiles.count = 0
        assert (await server.admit("/validate", review(_pod("plain", False))))["allowed"] is True
        assert not (await server.admit("/validate", review(_pod("root", True))))["allowed"]
        assert compiles.count == 0


MUTATING_POLICY = """\
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata:
  name: harden-pods
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >-
        Object{
          metadata: Object.metadata{labels: {"security.example.org/hardened": "true"}},
          spec: Object.spec{
            securityContext: Object.spec.securityContext{runAsNonRoot: true, seccompProfile: Object.spec.securityContext.seccompProfile{type: "RuntimeDefault"}},
            containers: object.spec.containers.map(c, Object.spec.containers{
              name: c.name,
              securityContext: Object.spec.containers.securityContext{allowPrivilegeEscalation: false}
            })
          }
        }
  - patchType: JSONPatch
    jsonPatch:
      expression: >-
        [JSONPatch{op: "add", path: "/metadata/annotations", value: {"example.org/owner": "platform"}}]
"""


async def test_mutating_policy_patch_applies_and_yields_a_valid_object(tmp_path):
    policies = _write(tmp_path, "policies", MUTATING_POLICY)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "team-a", "labels": {"app": "web"}},
           "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]},
                                   {"name": "sidecar", "image": "busybox:1.36"}]}}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "team-a"},
                  "spec": {"selector": {"matchLabels": {"app": "web"}},
                           "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod["spec"]}}}
    async with running_server(policies, tmp_path) as server:
        response = await server.admit("/mutate", review(pod))
        patched = apply_patch(pod, decode_patch(response))
        assert_valid_k8s(patched)
        assert patched["metadata"]["labels"] == {"app": "web", "security.example.org/hardened": "true"}
        assert patched["metadata"]["annotations"] == {"example.org/owner": "platform"}
        assert patched["spec"]["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
        assert [c["securityContext"] for c in patched["spec"]["containers"]] == [{"allowPrivilegeEscalation": False}] * 2
        assert patched["spec"]["containers"][0]["ports"] == [{"containerPort": 80}]  # containers merge by name
        # autogen: the same policy mutates the pod template of a Deployment
        response = await server.admit("/mutate", review(deployment))
        mutated = apply_patch(deployment, decode_patch(response))
        assert_valid_k8s(mutated)
        template = mutated["spec"]["template"]
        assert template["metadata"]["labels"]["security.example.org/hardened"] == "true"
        assert template["spec"]["securityContext"]["runAsNonRoot"] is True


async def test_a_mutation_with_cel_values_that_are_no_json_is_converted_or_refused_never_a_500(tmp_path):
    """A duration, bytes or a timestamp are patched in as cel-go writes them as JSON; a CEL type is the policy's
    error, which its failure policy decides (Ignore here). Before, the first two failed when the answer was
    encoded: an HTTP 500, whatever the policy's failure policy said."""
    converted = MUTATING_POLICY.replace('value: {"example.org/owner": "platform"}',
                                        'value: {"raw": b"hi", "since": timestamp("2026-01-02T03:04:05Z"), '
                                        '"wait": duration("1m30s")}')
    unconvertible = MUTATING_POLICY.replace('value: {"example.org/owner": "platform"}', 'value: {"kind": type(1)}')
    unconvertible = unconvertible.replace("spec:\n  matchConstraints:", "spec:\n  failurePolicy: Ignore\n  matchConstraints:", 1)
    assert converted != MUTATING_POLICY and unconvertible != MUTATING_POLICY and "failurePolicy: Ignore" in unconvertible
    pod = _pod("web", privileged=False)
    for text, expected in ((converted, {"raw": "aGk=", "since": "2026-01-02T03:04:05Z", "wait": "90s"}), (unconvertible, None)):
        run = tmp_path / ("unconvertible" if expected is None else "converted")
        run.mkdir()
        async with running_server(_write(run, "policies", text), run) as server:
            response = await server.admit("/mutate", review(pod))  # a 200 with a review, not a 500
            assert response["allowed"] is True
            if expected is None:  # the policy errs and is ignored: nothing patched, and the user is told
                assert "patch" not in response and any("JSON cannot hold" in w for w in response.get("warnings", [])), response
            else:
                patched = apply_patch(pod, decode_patch(response))
                assert_valid_k8s(patched)
                assert patched["metadata"]["annotations"] == expected


VAP = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replica-limit
spec:
  failurePolicy: Fail
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - apiGroups: [apps]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [deployments]
  auditAnnotations:
  - key: requested-replicas
    valueExpression: "string(object.spec.replicas)"
  validations:
  - expression: object.spec.replicas <= int(params.data.maxReplicas)
    messageExpression: "'replicas must be at most ' + params.data.maxReplicas"
    reason: Invalid
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: replica-limit-team-a
spec:
  policyName: replica-limit
  validationActions: [Deny]
  paramRef:
    name: replica-limits
    namespace: platform
    parameterNotFoundAction: Deny
  matchResources:
    namespaceSelector:
      matchLabels: {team: a}
"""

STATE = """\
apiVersion: v1
kind: Namespace
metadata: {name: team-a, labels: {team: a}}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b, labels: {team: b}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: replica-limits, namespace: platform}
data: {maxReplicas: "3"}
"""


def _deployment(namespace: str, replicas: int) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"web-{replicas}", "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}}


async def test_validating_admission_policy_reads_params_from_a_configmap_in_state(tmp_path):
    policies = _write(tmp_path, "policies", VAP)
    state = _write(tmp_path, "state", STATE)
    async with running_server(policies, tmp_path, state=state) as server:
        denied = await server.admit("/validate", review(_deployment("team-a", 5)))
        assert denied["allowed"] is False
        assert "replicas must be at most 3" in denied["status"]["message"]
        assert (denied["status"]["reason"], denied["status"]["code"]) == ("Invalid", 422)  # the validation's reason
        admitted = await server.admit("/validate", review(_deployment("team-a", 2)))
        assert admitted["allowed"] is True
        assert admitted["auditAnnotations"] == {"replica-limit.requested-replicas": "2"}
        # the binding selects team-a only
        assert (await server.admit("/validate", review(_deployment("team-b", 5))))["allowed"] is True
