"""MutatingAdmissionPolicy side by side: the same MAP + binding in the API server (its dry-run create answers with the
object as it would store it) and in Quartermaster (`/mutate` with the review the API server would send, its
patch applied with a JSON-Patch library); the stored object must be what Quartermaster made of it."""

from __future__ import annotations

import copy
import uuid
from pathlib import Path
from typing import Any, Mapping, Sequence

from tests.cluster.kube import Kube, eventually
from tests.cluster.predict import stored_differences
from tests.cluster.vap_oracle import NAMESPACE, as_request, load_in_tree, oracle_namespace, unload_in_tree
from tests.cluster.vap_sides import admission_review, defaulted, in_tree, quartermaster, requester
from tests.cluster.vap_translate import MUTATE_LABEL, bindings

MAP_API = "admissionregistration.k8s.io/v1beta1"
SENTINEL_LABEL = "vap-oracle.quartermaster.dev/map-sentinel"
POD_RULE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}


def mutating_policy(name: str, patch_type: str, expression: str, **spec: Any) -> list[dict[str, Any]]:
    key = "applyConfiguration" if patch_type == "ApplyConfiguration" else "jsonPatch"
    policy = {"apiVersion": MAP_API, "kind": "MutatingAdmissionPolicy", "metadata": {"name": name}, "spec": {
        "matchConstraints": {"resourceRules": [POD_RULE]}, "reinvocationPolicy": "Never", "failurePolicy": "Fail",
        "mutations": [{"patchType": patch_type, key: {"expression": expression}}], **spec}}
    return [policy, *bindings(name, validating=False)]


def wait_for_mutating_policies(kube: Kube) -> None:
    """As for VAP (vap_oracle.wait_for_policies): a MAP created after the others that labels a ConfigMap once active."""
    token = uuid.uuid4().hex[:8]
    name = f"map-sentinel-{token}"
    documents = [
        {"apiVersion": MAP_API, "kind": "MutatingAdmissionPolicy", "metadata": {"name": name}, "spec": {
            "matchConstraints": {"resourceRules": [{**POD_RULE, "resources": ["configmaps"]}]},
            "reinvocationPolicy": "Never",
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                "expression": f"Object{{metadata: Object.metadata{{annotations: {{'sentinel': '{token}'}}}}}}"}}]}},
        {"apiVersion": MAP_API, "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": name}, "spec": {
            "policyName": name, "matchResources": {"objectSelector": {"matchLabels": {SENTINEL_LABEL: token}}}}}]
    assert not load_in_tree(kube, documents)
    probe = as_request(kube, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe"}}, {SENTINEL_LABEL: token})
    assert probe is not None

    def mutated() -> bool:
        stored = in_tree(kube, probe).stored or {}
        return (stored.get("metadata", {}).get("annotations") or {}).get("sentinel") == token
    eventually(mutated, 60, message="the API server's mutating policies to become active")
    unload_in_tree(kube, reversed(documents))


def mutation_differences(admin: Kube, workdir: Path, documents: Sequence[Mapping[str, Any]],
                         objects: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, list[str]]:
    """For each (policy, object): where the object the API server would store differs from Quartermaster's."""
    namespace = oracle_namespace(admin)
    refused = load_in_tree(admin, documents)
    assert not refused, refused
    try:
        wait_for_mutating_policies(admin)
        user = requester(admin)
        reviews, stored, names = [], [], []
        for policy, obj in objects:
            request = as_request(admin, obj, {MUTATE_LABEL: policy})
            unselected = as_request(admin, obj, {MUTATE_LABEL: "none"})
            assert request is not None and unselected is not None
            base = defaulted(admin, unselected)
            assert base is not None, f"the API server refused {obj['metadata']['name']} itself"
            base["metadata"]["labels"] = dict(request.obj["metadata"]["labels"])
            answer = in_tree(admin, request)
            reviews.append(("/mutate", admission_review(request, base, user)))
            stored.append(answer)
            names.append(f"{policy} {obj['metadata']['name']}")
        ours = quartermaster(documents, [namespace], workdir / "ours", reviews)
    finally:
        unload_in_tree(admin, documents)
    out: dict[str, list[str]] = {}
    for name, answer, mine in zip(names, stored, ours):
        if not answer.allowed or not mine.allowed:  # a mutation that fails denies under failurePolicy Fail
            out[name] = [] if answer.allowed == mine.allowed else [
                f"allowed: API server {answer.allowed} ({answer.raw[:200]}), Quartermaster {mine.allowed} ({mine.raw[:200]})"]
            continue
        theirs, made = answer.stored or {}, _without_token(mine.stored or {})
        problems = stored_differences(made.get("spec"), theirs.get("spec"), "/spec")
        for key in ("labels", "annotations"):  # the whole map: a key only the API server added is a difference too
            ours_map = copy.deepcopy((made.get("metadata") or {}).get(key) or {})
            theirs_map = (theirs.get("metadata") or {}).get(key) or {}
            if ours_map != theirs_map:
                problems.append(f"/metadata/{key}: API server {theirs_map}, Quartermaster {ours_map}")
        out[name] = problems
    return out


def _without_token(node: Any) -> Any:
    """The ServiceAccount plugin's token volume and mounts (random names) out of our copy, as predict leaves them
    out of the stored one."""
    if isinstance(node, dict):
        return {k: _without_token(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_without_token(i) for i in node
                if not (isinstance(i, dict) and str(i.get("name", "")).startswith("kube-api-access-"))]
    return node


def pod(name: str, **spec: Any) -> dict[str, Any]:
    containers = spec.pop("containers", [{"name": "app", "image": "nginx:1.27"}])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE, **spec.pop("metadata", {})},
            "spec": {"containers": containers, **spec}}
