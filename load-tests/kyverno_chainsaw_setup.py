"""Quartermaster in Kyverno's place, for Kyverno's chainsaw tests (load-tests/kyverno_chainsaw.py).

What the tests expect to find in the cluster, and how it is provided here:
- Kyverno's CRDs (`config/crds/` of the Kyverno module pinned in load-tests/kyverno/go.mod): policies,
  exceptions, reports, server-side applied as Kyverno's CI applies them.
- An admission controller that reads the policies the tests `kubectl apply`: Quartermaster installed as
  tests/cluster installs it (the chart's CRDs and RBAC, `serve --kubeconfig` with the chart's
  ServiceAccount), with `--policy-objects` covering the Kyverno groups, PolicyExceptions honoured from any
  namespace and the kinds Kyverno's CI lets its background controller generate (its `standard` config).
- Webhook registrations for what the tests create. Kyverno registers the resources its policies name; the
  equivalent here is every resource outside the system namespaces, less what Kyverno's default
  `resourceFilters` leave out (Events, Nodes, access reviews, bindings), as CEL matchConditions.
- A `kubectl` on PATH for the tests' script steps: the one the control plane was built with.

The policy-readiness step templates (`_step-templates/*-ready.yaml`) assert the status Kyverno's own
controllers write (`reason: Succeeded`, `WebhookConfigured`, `RBACPermissionsGranted`). They are the one
part of the tests replaced: each asserts instead the `Ready` condition Quartermaster writes on a policy
object it loaded. Every other file runs as Kyverno ships it.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
KYVERNO_MODULE = HERE / "kyverno"
POLICY_GROUPS = ("quartermaster.dev", "kyverno.io", "policies.kyverno.io")
# The groups of config/crds/ applied: policies and exceptions (kyverno.io, policies.kyverno.io), the
# report CRDs the tests assert on (wgpolicyk8s.io; reports.kyverno.io's ephemeral reports)
CRD_FOLDERS = ("kyverno", "policies.kyverno.io", "policyreport", "reports")
# Kyverno's CI (scripts/config/standard/kyverno.yaml) lets its background controller create these
GENERATE_KINDS = (
    {"apiGroup": "", "resources": ["configmaps", "secrets", "resourcequotas", "limitranges", "namespaces", "pods"]},
    {"apiGroup": "networking.k8s.io", "resources": ["networkpolicies"]},
    {"apiGroup": "rbac.authorization.k8s.io",
     "resources": ["roles", "rolebindings", "clusterroles", "clusterrolebindings"]},
    {"apiGroup": "resource.k8s.io", "resources": ["resourceclaimtemplates"]},
)
SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease", "quartermaster")
# Kyverno's default resourceFilters (charts/kyverno/values.yaml, config.resourceFilters), as CEL
MATCH_CONDITIONS = (
    {"name": "not-filtered-kinds",
     "expression": "!(request.kind.kind in ['Event', 'Node', 'APIService', 'TokenReview', 'SubjectAccessReview', "
                   "'SelfSubjectAccessReview', 'LocalSubjectAccessReview', 'Binding', 'Lease'])"},
    {"name": "not-status", "expression": "!has(request.subResource) || request.subResource != 'status'"},
)
WEBHOOK_TIMEOUT_SECONDS = 10


def kyverno_version() -> str:
    for line in (KYVERNO_MODULE / "go.mod").read_text().splitlines():
        if line.startswith("require github.com/kyverno/kyverno "):
            return line.split()[2]
    raise SystemExit(f"{KYVERNO_MODULE / 'go.mod'}: no 'require github.com/kyverno/kyverno vX.Y.Z' line")


def kyverno_module_dir() -> Path:
    """Kyverno's module at the pinned release, downloaded into the Go module cache if it is not there."""
    out = subprocess.run(["go", "mod", "download", "-json", f"github.com/kyverno/kyverno@{kyverno_version()}"],
                         cwd=KYVERNO_MODULE, check=True, capture_output=True, text=True)
    return Path(json.loads(out.stdout)["Dir"])


def chainsaw_binary() -> Path:
    out = subprocess.run([str(HERE / "chainsaw" / "build")], check=True, capture_output=True, text=True)
    return Path(out.stdout.strip().splitlines()[-1]) / "chainsaw"


# ---- the tests, copied (the module cache is read-only) with the readiness templates replaced

def _ready_status(api_version: str) -> dict[str, Any]:
    """Where Quartermaster's `Ready` condition is, by the CRD's status schema: kyverno.io kinds have
    `status.conditions`; policies.kyverno.io kinds have `status.conditionStatus` (with `ready`)."""
    if api_version.startswith("policies.kyverno.io/"):
        return {"conditionStatus": {"ready": True}}
    return {"(conditions[?type == 'Ready'])": [{"status": "True"}]}


def quartermaster_template(template: dict[str, Any]) -> dict[str, Any]:
    """The same StepTemplate, each `assert` on a policy's status asking for Quartermaster's Ready instead."""
    steps = []
    for operation in template["spec"].get("try", []):
        resource = (operation.get("assert") or {}).get("resource")
        if isinstance(resource, dict) and "status" in resource:
            resource = {**resource, "status": _ready_status(resource.get("apiVersion", ""))}
            operation = {**operation, "assert": {**operation["assert"], "resource": resource}}
        steps.append(operation)
    return {**template, "spec": {**template["spec"], "try": steps}}


def _templates(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["template"]] if isinstance(node.get("template"), str) and "use" not in node else []
        return found + [t for value in node.values() for t in _templates(value)]
    if isinstance(node, list):
        return [t for value in node for t in _templates(value)]
    return []


def drop_unloadable(target: Path) -> list[str]:
    """Tests whose step templates do not exist in Kyverno's own tree (a wrong `../` depth) stop chainsaw from
    loading their whole folder, even marked `skip`; they are left out of the copy and listed."""
    dropped = []
    for path in sorted(target.rglob("chainsaw-test.yaml")):
        test = yaml.safe_load(path.read_text())
        # joined as Go's filepath.Join does: a leading "/" is no root
        missing = [t for t in _templates(test.get("spec") or {}) if not (path.parent / t.lstrip("/")).exists()]
        if missing:
            shutil.rmtree(path.parent)
            dropped.append(f"{path.parent.relative_to(target)}: no {missing[0]}")
    return dropped


def copy_tests(module: Path, target: Path) -> tuple[Path, list[str]]:
    """The tests, writable, with Quartermaster's readiness templates; and the tests left out (why)."""
    source = module / "test" / "conformance" / "chainsaw"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
    # a module zip keeps no file modes: the scripts the tests run (`./x.sh`) are executable in Kyverno's tree
    for script in target.rglob("*.sh"):
        script.chmod(0o755)
    for path in (target / "_step-templates").glob("*-ready*.yaml"):
        path.chmod(0o644)
        path.write_text(yaml.safe_dump(quartermaster_template(yaml.safe_load(path.read_text())), sort_keys=False))
    return target, drop_unloadable(target)


# ---- the cluster side

def apply_kyverno_crds(kubectl: list[str], module: Path) -> None:
    for folder in CRD_FOLDERS:
        subprocess.run([*kubectl, "apply", "--server-side", "--force-conflicts", "-f",
                        str(module / "config" / "crds" / folder)], check=True, capture_output=True, text=True,
                       timeout=300)
    subprocess.run([*kubectl, "wait", "--for=condition=Established", "--timeout=120s", "crd", "--all"],
                   check=True, capture_output=True, text=True, timeout=180)


def registrations(url: str, ca_bundle: str) -> list[dict[str, Any]]:
    """A mutating and a validating webhook for every resource outside the system namespaces."""
    common = {
        "admissionReviewVersions": ["v1"], "sideEffects": "NoneOnDryRun", "failurePolicy": "Fail",
        "matchPolicy": "Equivalent", "timeoutSeconds": WEBHOOK_TIMEOUT_SECONDS,
        "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                                    "values": list(SYSTEM_NAMESPACES)}]},
        "matchConditions": [dict(c) for c in MATCH_CONDITIONS],
    }

    def rules(operations: list[str]) -> list[dict[str, Any]]:
        return [{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"], "operations": operations,
                 "scope": "*"}]
    mutating = {**common, "name": "mutate.chainsaw.quartermaster.dev", "reinvocationPolicy": "IfNeeded",
                "clientConfig": {"url": f"{url}/mutate", "caBundle": ca_bundle}, "rules": rules(["CREATE", "UPDATE"])}
    validating = {**common, "name": "validate.chainsaw.quartermaster.dev",
                  "clientConfig": {"url": f"{url}/validate", "caBundle": ca_bundle},
                  "rules": rules(["CREATE", "UPDATE", "DELETE", "CONNECT"])}
    # policies that would not load are refused as they are applied, as Kyverno's policy webhook refuses them
    policy_check = {**common, "name": "validate-policy.chainsaw.quartermaster.dev", "sideEffects": "None",
                    "clientConfig": {"url": f"{url}/validate-policy", "caBundle": ca_bundle},
                    "rules": [{"apiGroups": [group], "apiVersions": ["*"], "resources": ["*"],
                               "operations": ["CREATE", "UPDATE"], "scope": "*"} for group in POLICY_GROUPS]}
    meta = {"name": "quartermaster-chainsaw"}
    return [{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
             "metadata": meta, "webhooks": [mutating]},
            {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
             "metadata": meta, "webhooks": [validating, policy_check]}]


@dataclass(frozen=True)
class Installed:
    """Quartermaster serving in the cluster: its URL, its log, and how to stop it."""
    url: str
    log: Path
    pid: int


def install_quartermaster(record: Any, qmcluster: Path, workdir: Path) -> Installed:
    from tests.cluster.kube import Kube
    from tests.cluster.quartermaster import install

    kube = Kube(record, record.admin_kubeconfig, qmcluster)
    policies = workdir / "policies"  # none of the platform's: the tests bring their own
    policies.mkdir(parents=True, exist_ok=True)
    values = {"live": {"policyObjectGroups": list(POLICY_GROUPS), "generateKinds": [dict(k) for k in GENERATE_KINDS]},
              "exceptionNamespaces": ["*"]}
    installation = install(kube, record, workdir / "quartermaster", policies=policies, values=values)
    replica = installation.start_replica(
        "replica-a", f"--policy-objects={','.join(POLICY_GROUPS)}", "--exception-namespace=*", "--allow-empty")
    url = f"https://127.0.0.1:{replica.port}"
    ca_bundle = base64.b64encode((installation.cert_dir / "ca.crt").read_bytes()).decode()
    kube.apply_all(registrations(url, ca_bundle))
    # the namespace Kyverno is installed in, where its tests put their PolicyExceptions
    kube.apply_all([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kyverno"}}])
    return Installed(url, replica.log, replica.process.pid)


def stop(installed: Installed, kubectl: list[str]) -> None:
    """Registrations first: with failurePolicy Fail they would refuse every write once the replica is gone."""
    for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
        subprocess.run([*kubectl, "delete", kind, "quartermaster-chainsaw", "--ignore-not-found"],
                       capture_output=True, text=True, timeout=60)
    try:
        os.kill(installed.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass


POLICY_PLURALS = ("clusterpolicies.kyverno.io", "policies.kyverno.io", "policyexceptions.kyverno.io",
                  "validatingpolicies.policies.kyverno.io", "mutatingpolicies.policies.kyverno.io",
                  "generatingpolicies.policies.kyverno.io", "namespacedvalidatingpolicies.policies.kyverno.io",
                  "namespacedmutatingpolicies.policies.kyverno.io", "namespacedgeneratingpolicies.policies.kyverno.io",
                  "policyexceptions.policies.kyverno.io")


def delete_policies(env: dict[str, str]) -> None:
    """Every policy and exception the tests created, in every namespace (kubectl from env's PATH). One kind at a
    time: kubectl deletes nothing at all when one kind of a list is not served (a CRD this release lacks)."""
    for plural in POLICY_PLURALS:
        subprocess.run(["kubectl", "delete", plural, "--all", "--all-namespaces", "--wait=false"],
                       env=env, capture_output=True, text=True, timeout=120)


def kubectl_shim(qmcluster: Path, directory: Path) -> Path:
    """A directory holding `kubectl`, for PATH: the tests' scripts call kubectl by name."""
    directory.mkdir(parents=True, exist_ok=True)
    shim = directory / "kubectl"
    shim.write_text(f'#!/bin/sh\nexec "{qmcluster}" kubectl "$@"\n')
    shim.chmod(0o755)
    return directory
