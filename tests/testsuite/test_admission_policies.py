"""ValidatingAdmissionPolicy / MutatingAdmissionPolicy in `quartermaster test`, read as `kyverno test` reads them:
a policy without a binding is evaluated as if bound (runner only; `serve` keeps it inert)."""

import json
from pathlib import Path

import yaml

from webhook.cli import main

UNBOUND_VAP = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: max-replicas}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  matchConditions:
  - {name: not-exempt, expression: "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"}
  validations:
  # params is null without a binding, whatever paramKind says
  - expression: "params == null && object.spec.replicas <= 3"
    message: at most 3 replicas
"""
UNBOUND_MAP = """\
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata: {name: stamp}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"stamped": "yes"}}}'
"""


def _deployment(name: str, replicas: int, labels: dict | None = None) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default", "labels": labels or {"app": name}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def _suite(tmp: Path, policies: str, results: list[dict]) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "policy.yaml").write_text(policies)
    deployments = [_deployment("small", 2), _deployment("large", 9), _deployment("spared", 9, {"exempt": "x"})]
    (tmp / "resources.yaml").write_text(yaml.safe_dump_all(deployments))
    patched = _deployment("small", 2)
    patched["metadata"]["labels"]["stamped"] = "yes"
    (tmp / "patched.yaml").write_text(yaml.safe_dump(patched))
    (tmp / "kyverno-test.yaml").write_text(json.dumps({
        "apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Test", "metadata": {"name": tmp.name},
        "policies": ["policy.yaml"], "resources": ["resources.yaml"], "results": results}))
    return tmp


def _run(capsys, path: Path) -> tuple[int, str]:
    code = main(["test", str(path), "--detailed-results"])
    return code, capsys.readouterr().out


def test_unbound_admission_policies_are_evaluated_as_the_kyverno_cli_does(tmp_path, capsys):
    suite = _suite(tmp_path / "s", UNBOUND_VAP + "---\n" + UNBOUND_MAP, [
        {"isValidatingAdmissionPolicy": True, "policy": "max-replicas", "kind": "Deployment",
         "resources": ["small"], "result": "pass"},
        {"isValidatingAdmissionPolicy": True, "policy": "max-replicas", "kind": "Deployment",
         "resources": ["large"], "result": "fail"},
        {"isValidatingAdmissionPolicy": True, "policy": "max-replicas", "kind": "Deployment",
         "resources": ["spared"], "result": "skip"},
        {"isMutatingAdmissionPolicy": True, "policy": "stamp", "kind": "Deployment", "resources": ["small"],
         "result": "pass", "patchedResources": "patched.yaml"},
    ])
    code, out = _run(capsys, suite)
    assert out.rstrip().splitlines()[-1] == "4 passed, 0 failed", out
    assert code == 0


def test_a_bound_policy_whose_match_conditions_are_false_reports_skip(tmp_path, capsys):
    binding = ("---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\n"
               "metadata: {name: max-replicas}\nspec:\n  policyName: max-replicas\n  validationActions: [Deny]\n")
    policy = UNBOUND_VAP.replace("  paramKind: {apiVersion: v1, kind: ConfigMap}\n", "").replace("params == null && ", "")
    suite = _suite(tmp_path / "s", policy + binding, [
        {"isValidatingAdmissionPolicy": True, "policy": "max-replicas", "kind": "Deployment",
         "resources": ["spared"], "result": "skip"},
        {"isValidatingAdmissionPolicy": True, "policy": "max-replicas", "kind": "Deployment",
         "resources": ["large"], "result": "fail"},
    ])
    code, out = _run(capsys, suite)
    assert out.rstrip().splitlines()[-1] == "2 passed, 0 failed", out


async def test_serve_keeps_an_unbound_admission_policy_inert():
    """The stand-in binding is the runner's alone: through the loader and engine `serve` uses, nothing runs."""
    from webhook.app import build_registry
    from webhook.cel import CelCompiler
    from webhook.engine import AdmissionEngine
    from webhook.engine.offline import admit_offline
    from webhook.policy.documents import Document
    from webhook.policy.loader import PolicyLoader
    from webhook.policy.snapshot import PolicySnapshot, PolicyStore
    from webhook.state.memory import InMemoryClusterState

    docs = [Document("p.yaml", i, d, None) for i, d in enumerate(yaml.safe_load_all(UNBOUND_VAP + "---\n" + UNBOUND_MAP))]
    compiled, errors = PolicyLoader(build_registry(), CelCompiler()).compile_documents(docs)
    assert not errors and len(compiled) == 2
    store = PolicyStore()
    store.publish(PolicySnapshot.of(compiled, 1))
    result = await admit_offline(AdmissionEngine(store, InMemoryClusterState([])), _deployment("large", 9))
    assert result.allowed and result.results == () and result.object == _deployment("large", 9)


BOUND_VAP = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replicas-from-params}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:  # no operations: the API server would never match it; kyverno test does not look
    - {apiGroups: [apps], apiVersions: [v1], resources: [deployments]}
  validations:
  - expression: "object.spec.replicas <= int(params.items[0].data.max) + int(params.items[1].data.max)"
    messageExpression: "'too many replicas: ' + string(size(params.items)) + ' limits'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replicas-from-params}
spec:
  policyName: replicas-from-params
  validationActions: [Deny]
  paramRef:
    namespace: default
    selector: {matchLabels: {role: limit}}
"""


def test_bound_policies_as_the_kyverno_cli_reads_them(tmp_path, capsys):
    """Only the binding selects (the policy's own constraints are not checked), and the objects the paramRef
    selector finds are one `params` value {items: [...]} in paramResources order."""
    suite = _suite(tmp_path / "s", BOUND_VAP, [
        {"isValidatingAdmissionPolicy": True, "policy": "replicas-from-params", "kind": "Deployment",
         "resources": ["small"], "result": "pass"},
        {"isValidatingAdmissionPolicy": True, "policy": "replicas-from-params", "kind": "Deployment",
         "resources": ["large"], "result": "fail"},
    ])
    limits = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"limit-{n}", "namespace": "default",
                                                                      "labels": {"role": "limit"}}, "data": {"max": n}}
              for n in ("1", "2")]
    (suite / "params.yaml").write_text(yaml.safe_dump_all(limits))
    test = json.loads((suite / "kyverno-test.yaml").read_text())
    (suite / "kyverno-test.yaml").write_text(json.dumps({**test, "paramResources": ["params.yaml"]}))
    code, out = _run(capsys, suite)
    assert out.rstrip().splitlines()[-1] == "2 passed, 0 failed", out
    assert "too many replicas: 2 limits" in out

