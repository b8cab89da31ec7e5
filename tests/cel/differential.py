"""Collect CEL expressions (shared conformance corpus, this repository's YAML) and realistic activations."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import yaml

from webhook.model.lookups import LookupRefused

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
REPO = Path(__file__).resolve().parents[2]
CEL_KEYS = ("expression", "messageExpression", "valueExpression", "condition")
POLICY_DIRS = ("-vpol", "-mpol", "-gpol", "-cel")
RESOURCE_KINDS = frozenset({"Pod", "Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "Service", "Namespace",
                            "ConfigMap", "Ingress", "ReplicaSet", "Secret", "PersistentVolumeClaim", "NetworkPolicy"})


def corpus_root() -> Path | None:
    for base in (REPO.parent, REPO.parent.parent, Path("/work")):
        candidate = base / "shared" / "conformance" / "kyverno-policies"
        if candidate.is_dir():
            return candidate
    return None


@dataclass
class Policy:
    source: str
    env: str
    variables: list[tuple[str, str]] = field(default_factory=list)
    expressions: list[str] = field(default_factory=list)
    resources: list[dict] = field(default_factory=list)


def _documents(path: Path) -> Iterator[dict]:
    try:
        for doc in yaml.load_all(path.read_text(), Loader=_LOADER):
            if isinstance(doc, dict):
                yield doc
    except (yaml.YAMLError, UnicodeDecodeError):
        return


def cel_texts(node: Any) -> Iterator[str]:
    """Every non-empty CEL text (CEL_KEYS) anywhere in a policy document."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in CEL_KEYS and isinstance(value, str) and value.strip():
                yield value
            else:
                yield from cel_texts(value)
    elif isinstance(node, list):
        for item in node:
            yield from cel_texts(item)


def _env(doc: dict) -> str:
    api = str(doc.get("apiVersion", ""))
    if api.startswith("policies.kyverno.io"):
        return "kyverno"
    if doc.get("kind") in ("MutatingAdmissionPolicy",):
        return "mutating"
    return "admission"


def _variables(doc: dict) -> list[tuple[str, str]]:
    spec = doc.get("spec") or {}
    found = spec.get("variables") or []
    for rule in spec.get("rules") or []:
        found += ((rule.get("validate") or {}).get("cel") or {}).get("variables") or []
    return [(v["name"], v["expression"]) for v in found if isinstance(v, dict) and "name" in v and "expression" in v]


def corpus_policies(root: Path) -> list[Policy]:
    policies = []
    for category in sorted(p for p in root.iterdir() if p.is_dir() and p.name.endswith(POLICY_DIRS)):
        for directory in sorted(p for p in category.iterdir() if p.is_dir()):
            files = sorted(directory.rglob("*.yaml"))
            resources = [d for f in files for d in _documents(f) if d.get("kind") in RESOURCE_KINDS]
            for f in files:
                for doc in _documents(f):
                    if doc.get("kind") in RESOURCE_KINDS or doc.get("kind") in ("Test", "Values"):
                        continue
                    expressions = list(cel_texts(doc.get("spec")))
                    if expressions:
                        policies.append(Policy(f"{f.relative_to(root)}:{doc.get('metadata', {}).get('name')}",
                                               _env(doc), _variables(doc), expressions, resources[:2]))
    return policies


def corpus_pods(root: Path, count: int = 3) -> list[dict]:
    pods = []
    for f in sorted(root.glob("pod-security-vpol/*/*/.kyverno-test/*.yaml")) + sorted(root.glob("*-vpol/*/.kyverno-test/*.yaml")):
        for doc in _documents(f):
            if doc.get("kind") == "Pod" and len(pods) < count and doc not in pods:
                pods.append(doc)
    return pods


def repository_expressions() -> list[tuple[str, str]]:
    """(env, expression) from this repository's YAML: policies, test cases, examples."""
    found = []
    for base in ("policies", "tests", "examples"):
        for f in sorted((REPO / base).rglob("*.yaml")):
            for doc in _documents(f):
                for expression in cel_texts(doc):
                    found.append(("dra" if "device." in expression else "admission", expression))
    return found


def activation(obj: dict, variables: dict | None = None) -> dict:
    meta = obj.get("metadata") or {}
    api_version = obj.get("apiVersion", "v1")
    group, _, version = api_version.rpartition("/")
    namespace = meta.get("namespace", "default")
    return {
        "object": copy.deepcopy(obj), "oldObject": None, "params": None, "variables": variables or {},
        "namespaceObject": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": {"team": "a"}}},
        "request": {"uid": "0", "operation": "CREATE", "namespace": namespace, "name": meta.get("name", ""),
                    "kind": {"group": group, "version": version, "kind": obj.get("kind", "")},
                    "resource": {"group": group, "version": version, "resource": obj.get("kind", "").lower() + "s"},
                    "userInfo": {"username": "alice@example.com", "groups": ["system:authenticated"]}, "dryRun": False},
    }


DEVICES = [
    {"driver": "gpu.nvidia.com", "attributes": {"gpu.nvidia.com": {"profile": "1g.5gb", "productName": "NVIDIA A100-SXM4-40GB"}},
     "capacity": {"gpu.nvidia.com": {"memory": "40Gi"}}},
    {"driver": "gpu.nvidia.com", "attributes": {"gpu.nvidia.com": {"profile": "3g.40gb", "productName": "NVIDIA H100 80GB HBM3"}},
     "capacity": {"gpu.nvidia.com": {"memory": "80Gi"}}},
]


class OfflineLookups:
    """No cluster objects, no global context, network refused: both backends must fail the same way."""

    supplied = None

    def get(self, api_version, kind, namespace, name):
        return None

    def list(self, api_version, kind, namespace="", selector=None):
        return []

    def global_context(self, name):
        raise KeyError(name)

    def http(self, method, url, body=None):
        raise LookupRefused("network calls are refused offline")

    def image_data(self, ref):
        raise LookupRefused("image registries are not reachable offline")
