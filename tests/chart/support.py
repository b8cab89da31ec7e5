"""Render and lint the chart with a real Helm engine (helm-python-sdk wraps Helm's Go SDK), and check
every rendered object: Kubernetes kinds with kubernetes-validate (strict, 1.34), the chart's CRDs also
for structural-schema rules, third-party kinds (cert-manager, prometheus-operator) against the schemas
in tests/chart/third_party.py plus their metadata against Kubernetes' ObjectMeta."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

import helm_python as helm
import jsonschema
import yaml

from tests.chart.third_party import SCHEMAS
from tests.support import REPO, assert_valid_k8s
from webhook.deploy.structural import structural_problems

CHART = REPO / "charts" / "quartermaster"
RELEASE, NAMESPACE = "qm", "platform"
KUBE_VERSION = "v1.34.0"
# what every install must set (the chart refuses to render without it while the notebook policy is shipped);
# a test that sets notebook.issuer itself, even to "", gets its own value
SITE = {"notebook": {"issuer": "https://auth.example.org/realms/platform"}}


def with_site(values: Mapping[str, Any] | None) -> dict[str, Any]:
    merged = dict(values or {})
    merged["notebook"] = {**SITE["notebook"], **dict(merged.get("notebook") or {})}
    return merged

TEAM_QUOTA = """\
apiVersion: quartermaster.dev/v1alpha1
kind: ProfileQuota
metadata:
  name: team-quota
spec:
  namespaceSelector:
    matchLabels:
      quartermaster.dev/profile-class: team
  classes:
    team:
      gpus: 16
      storage: 2Ti
  defaultClass: team
"""

VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "cert-manager": {"certificates": {"mode": "certManager"}},
    "cert-manager-issuer": {"certificates": {"mode": "certManager",
                                             "certManager": {"issuerRef": {"name": "corp-ca", "kind": "ClusterIssuer",
                                                                           "group": "cert-manager.io"}}}},
    "audit-only": {"auditOnly": True},
    "extra-policies": {"policies": {"extra": {"team-quota.yaml": TEAM_QUOTA}}},
    "service-monitor": {"serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}}},
    "standalone": {"clusterState": "standalone", "replicaCount": 1},
    "external-certs": {"certificates": {"mode": "external",
                                        "external": {"secretName": "corp-webhook-tls", "caBundle": "Y2E="}}},
    "policy-reports": {"policyReports": {"installCRDs": True}},
    "openreports": {"policyReports": {"format": "openreports", "installCRDs": True}},
    "mutation-ignore": {"webhooks": {"mutate": {"failurePolicy": "Ignore"}}},
    "client-auth": {"clientAuth": {"caConfigMap": "apiserver-client-ca"}},
    "network-policy": {"networkPolicy": {"enabled": True, "apiServerCIDRs": ["10.0.0.0/24", "fd00::/64"],
                                         "extraFrom": [{"namespaceSelector": {"matchLabels": {
                                             "kubernetes.io/metadata.name": "monitoring"}}}]}},
    "existing-configmap": {"policies": {"existingConfigMap": "platform-policies-from-git"}},
    "grafana-dashboard": {"grafanaDashboard": {"enabled": True, "annotations": {"grafana_folder": "Platform"}}},
}


@dataclass(frozen=True)
class Rendered:
    objects: tuple[dict[str, Any], ...]
    notes: str

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind]

    def one(self, kind: str, name: str | None = None) -> dict[str, Any]:
        found = [o for o in self.of_kind(kind) if name is None or o["metadata"]["name"] == name]
        assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
        return found[0]

    def kinds(self) -> set[str]:
        return {o["kind"] for o in self.objects}


@lru_cache(maxsize=64)
def _render(values_json: str, namespace: str, release: str) -> Rendered:
    with helm.Chart.load(CHART) as chart:
        manifests = chart.render(json.loads(values_json), name=release, namespace=namespace, is_install=True)
    objects, notes = [], ""
    for path, text in sorted(manifests.items()):
        if path.endswith("NOTES.txt"):
            notes = text
            continue
        objects += [doc for doc in yaml.safe_load_all(text) if doc]
    return Rendered(tuple(objects), notes)


def render(values: Mapping[str, Any] | None = None, namespace: str = NAMESPACE, release: str = RELEASE) -> Rendered:
    """Render as `helm install` would (offline: `lookup` finds nothing). Cached: treat the result as read-only."""
    return _render(json.dumps(with_site(values), sort_keys=True), namespace, release)


def lint(values: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return helm.lint(CHART, with_site(values), strict=True, namespace=NAMESPACE, kube_version=KUBE_VERSION)


def validate_object(obj: Mapping[str, Any]) -> None:
    """Everything a cluster would check before storing the object, as far as can be checked offline."""
    group = obj["apiVersion"].rpartition("/")[0]
    schema = SCHEMAS.get((obj["apiVersion"], obj["kind"]))
    if schema is not None:
        jsonschema.Draft202012Validator(schema).validate(obj)
        # their metadata is Kubernetes' ObjectMeta: checked through a kind the schema knows
        assert_valid_k8s({"apiVersion": "v1", "kind": "ConfigMap", "metadata": obj["metadata"]})
        return
    assert group not in ("cert-manager.io", "monitoring.coreos.com"), f"no schema for {obj['apiVersion']} {obj['kind']}"
    assert_valid_k8s(obj)
    if obj["kind"] == "CustomResourceDefinition":
        validate_crd(obj)


def validate_crd(crd: Mapping[str, Any]) -> None:
    spec = crd["spec"]
    names = spec["names"]
    assert crd["metadata"]["name"] == f"{names['plural']}.{spec['group']}"
    assert names["plural"] == names["plural"].lower() and names["singular"] == names["kind"].lower()
    assert sum(1 for v in spec["versions"] if v["storage"]) == 1
    for version in spec["versions"]:
        problems = structural_problems(version["schema"]["openAPIV3Schema"])
        assert not problems, f"{crd['metadata']['name']} {version['name']}: {problems}"


def lint_problems(report: Mapping[str, Any]) -> list[str]:
    """Lint messages of severity warning (2) or error (3), and hard errors."""
    return [f"{m['path']}: {m['error']}" for m in report["messages"] if m["severity"] >= 2] + list(report["errors"])


def load_yaml_text(text: str) -> list[Any]:
    return [d for d in yaml.safe_load_all(text) if d is not None]
