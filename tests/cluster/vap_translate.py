"""The shared corpus's Kyverno ValidatingPolicies re-expressed as Kubernetes ValidatingAdmissionPolicies, for the
in-tree plugin and Quartermaster to evaluate side by side (test tooling: `quartermaster convert` goes from
ClusterPolicy to ValidatingPolicy, this goes one step further, where a faithful translation exists).

Each policy gets three bindings, selected by labels the comparison puts on the resource it sends: one with
validationActions [Deny] (allowed or denied, the denial's message and code), one with [Warn] (every failing
validation, as a warning) and one with [Audit] (no warning: the failures go to the audit log). Neither depends on the namespace, so cluster-scoped resources are selected the same way.
Whether an expression is Kubernetes CEL at all is left to the API server: it refuses a VAP whose expressions do not
compile (Kyverno's libraries), and Quartermaster must refuse the same document."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

import yaml

CORPUS = Path("/work/shared/conformance/kyverno-policies")
DENY_LABEL = "vap-oracle.quartermaster.dev/deny"
WARN_LABEL = "vap-oracle.quartermaster.dev/warn"
AUDIT_LABEL = "vap-oracle.quartermaster.dev/audit"
MUTATE_LABEL = "vap-oracle.quartermaster.dev/mutate"
EVERY = "all"  # a label value that selects every policy's binding
# spec fields of a ValidatingPolicy that have the same meaning in a ValidatingAdmissionPolicy
SHARED_FIELDS = ("failurePolicy", "matchConstraints", "matchConditions", "variables", "validations", "auditAnnotations")
# fields that do not change what admission decides for the resources the policy itself matches
IGNORED_FIELDS = ("validationActions", "webhookConfiguration", "autogen")


@dataclass(frozen=True)
class Translated:
    """A corpus policy as VAP documents, or why it has none (`reason`)."""
    name: str
    source: Path
    documents: tuple[dict[str, Any], ...] = ()
    reason: str = ""
    resources: tuple[dict[str, Any], ...] = field(default=(), repr=False)


def bindings(policy: str, validating: bool = True) -> list[dict[str, Any]]:
    """The bindings of `policy`: Deny and Warn for a VAP (by label), one for a MAP."""
    def binding(suffix: str, label: str, actions: list[str] | None) -> dict[str, Any]:
        kind = "ValidatingAdmissionPolicyBinding" if validating else "MutatingAdmissionPolicyBinding"
        spec: dict[str, Any] = {"policyName": policy, "matchResources": {"objectSelector": {"matchExpressions": [
            {"key": label, "operator": "In", "values": [policy, EVERY]}]}}}
        if actions is not None:
            spec["validationActions"] = actions
        api = "admissionregistration.k8s.io/v1" if validating else "admissionregistration.k8s.io/v1beta1"
        return {"apiVersion": api, "kind": kind, "metadata": {"name": f"{policy}-{suffix}"}, "spec": spec}
    if not validating:
        return [binding("mutate", MUTATE_LABEL, None)]
    return [binding("deny", DENY_LABEL, ["Deny"]), binding("warn", WARN_LABEL, ["Warn"]),
            binding("audit", AUDIT_LABEL, ["Audit"])]


def translate(policy: Mapping[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """(documents, "") or ([], why not)."""
    spec = policy.get("spec") or {}
    evaluation = spec.get("evaluation") or {}
    if (evaluation.get("mode") or "Kubernetes") != "Kubernetes":
        return [], f"evaluation.mode {evaluation['mode']} (JSON payloads have no VAP form)"
    if (evaluation.get("admission") or {}).get("enabled") is False:
        return [], "admission disabled (background only)"
    unknown = sorted(set(spec) - set(SHARED_FIELDS) - set(IGNORED_FIELDS) - {"evaluation"})
    if unknown:
        return [], f"Kyverno-only fields: {', '.join(unknown)}"
    name = policy["metadata"]["name"]
    vap = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
           "metadata": {"name": name},
           "spec": {k: copy.deepcopy(spec[k]) for k in SHARED_FIELDS if k in spec}}
    return [vap, *bindings(name)], ""


def _documents(path: Path) -> list[dict[str, Any]]:
    try:
        return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    except yaml.YAMLError:
        return []


def _suite_resources(policy_file: Path) -> list[dict[str, Any]]:
    """The resources of the kyverno-test suites next to the policy (each file once)."""
    seen: set[Path] = set()
    out: list[dict[str, Any]] = []
    for test in sorted(policy_file.parent.glob(".kyverno-test/*.yaml")) + sorted(policy_file.parent.glob("*test*.yaml")):
        for doc in _documents(test):
            if doc.get("kind") != "Test":
                continue
            for name in doc.get("resources") or []:
                path = (test.parent / name).resolve()
                if path not in seen and path.exists():
                    seen.add(path)
                    out += [d for d in _documents(path) if d.get("kind") and d.get("apiVersion")]
    return out


def corpus(root: Path = CORPUS) -> Iterator[Translated]:
    """Every ValidatingPolicy of the corpus, translated or not, with its suites' resources."""
    for path in sorted(root.rglob("*.yaml")):
        if ".kyverno-test" in path.parts or path.name.startswith("kyverno-test"):
            continue
        for doc in _documents(path):
            if doc.get("kind") != "ValidatingPolicy" or not str(doc.get("apiVersion", "")).startswith("policies.kyverno.io/"):
                continue
            documents, reason = translate(doc)
            yield Translated(doc["metadata"]["name"], path, tuple(documents), reason, tuple(_suite_resources(path)))
