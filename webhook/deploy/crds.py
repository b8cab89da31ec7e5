"""CustomResourceDefinitions of the platform policy kinds, derived from the kinds' JSON schemas.

One schema, two enforcers: the webhook's loader validates policy files with the kind's JSON schema,
and the API server validates policy objects with the CRD made from that same schema here, so that
`kubectl apply` of a bad policy fails before it reaches the webhook.
"""

from __future__ import annotations

from typing import Any, Iterable

from webhook.deploy.openapi import Conversion, SchemaConversionError, to_structural
from webhook.deploy.structural import structural_problems
from webhook.model.quickinit import frozen_dataclass
from webhook.policy.family import PolicyKind

CATEGORY = "quartermaster"
MANAGED_BY = {"app.kubernetes.io/part-of": "quartermaster"}


@frozen_dataclass
class GeneratedCrd:
    kind: PolicyKind
    manifest: dict[str, Any]
    loosened: tuple[str, ...]  # checks only the webhook makes (see openapi.to_structural)

    @property
    def name(self) -> str:
        return str(self.manifest["metadata"]["name"])

    @property
    def plural(self) -> str:
        return str(self.manifest["spec"]["names"]["plural"])

    @property
    def group(self) -> str:
        return str(self.manifest["spec"]["group"])


def plural_of(kind: str) -> str:
    lower = kind.lower()
    if lower.endswith("y") and lower[-2:-1] not in "aeiou":
        return lower[:-1] + "ies"
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        return lower + "es"
    return lower + "s"


def _printer_columns(schema: dict[str, Any]) -> list[dict[str, Any]]:
    spec = (schema.get("properties") or {}).get("spec") or {}
    fields = spec.get("properties") or {}
    columns = []
    if "mode" in fields:
        columns.append({"name": "Mode", "type": "string", "jsonPath": ".spec.mode",
                        "description": "Enforce blocks, Audit only warns and reports"})
    if "failurePolicy" in fields:
        columns.append({"name": "FailurePolicy", "type": "string", "jsonPath": ".spec.failurePolicy", "priority": 1})
    columns.append({"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status",
                    "description": "False when the webhook refused the policy object (see the condition's message)"})
    columns.append({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})
    return columns


def crd_for(kind: PolicyKind) -> GeneratedCrd:
    group, _, version = kind.api_version.partition("/")
    if not version:
        raise ValueError(f"{kind.kind}: api_version {kind.api_version!r} has no group")
    conversion: Conversion = to_structural(kind.schema)
    problems = structural_problems(conversion.schema)
    if problems:  # a converter bug: the API server would refuse the CRD
        raise SchemaConversionError(kind.kind, "; ".join(problems))
    schema = dict(conversion.schema)
    # live mode writes a Ready condition here when it loads or refuses the object (kube/policy_objects.py)
    schema["properties"] = {**(schema.get("properties") or {}), "status": {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True,
        "description": "Written by the webhook: conditions[type=Ready] says whether it loaded this policy, and why not."}}
    schema.setdefault("description", f"{kind.kind}: a Quartermaster platform policy ({kind.api_version}). "
                                     f"The webhook reads the same fields from policy YAML files.")
    plural = plural_of(kind.kind)
    manifest = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}", "labels": dict(MANAGED_BY)},
        "spec": {
            "group": group,
            "names": {"kind": kind.kind, "listKind": f"{kind.kind}List", "plural": plural,
                      "singular": kind.kind.lower(), "categories": [CATEGORY]},
            # platform policies govern the whole cluster; which namespaces they touch is their namespaceSelector
            "scope": "Cluster",
            "versions": [{
                "name": version, "served": True, "storage": True,
                "schema": {"openAPIV3Schema": schema},
                "subresources": {"status": {}},
                "additionalPrinterColumns": _printer_columns(schema),
            }],
        },
    }
    return GeneratedCrd(kind, manifest, conversion.loosened)


def generate_crds(kinds: Iterable[PolicyKind]) -> list[GeneratedCrd]:
    """One CRD per kind, sorted by name; two kinds of one group and plural would collide, so that is an error."""
    crds = sorted((crd_for(k) for k in kinds), key=lambda c: c.name)
    names = [c.name for c in crds]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise ValueError(f"kinds collide on CRD names: {', '.join(sorted(duplicates))}")
    return crds
