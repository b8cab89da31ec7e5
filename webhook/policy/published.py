"""The published schemas of the Kyverno and Kubernetes policy kinds, as the loader's JSON Schemas.

The API server refuses a policy with a misspelt field at `kubectl apply` (strict field validation against the
CRD's structural schema, or Kubernetes' own OpenAPI for admissionregistration.k8s.io); a policy file given to
`serve`, `apply`, `test` or `validate` is held to the same schema, so `validationFailureActon` is an error
here too, not an Enforce policy silently turned into Audit. The schemas are vendored in `schemas/` by
`tools/vendor_schemas.py` (release and licence in `schemas/NOTICE`).

A CRD's openAPIV3Schema is turned into JSON Schema the way the API server reads it: an object node that lists
its properties takes no others (unless `x-kubernetes-preserve-unknown-fields`), `nullable` admits null,
`x-kubernetes-int-or-string` admits both, an embedded resource admits apiVersion, kind and metadata. What
only the API server checks (CEL `x-kubernetes-validations`, list types, formats) is left to it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

_FOLDER = Path(__file__).parent / "schemas"
_DRAFT = "https://json-schema.org/draft/2020-12/schema"
# value validations JSON Schema reads as OpenAPI v3 does
_KEPT = frozenset({"enum", "pattern", "minLength", "maxLength", "minimum", "maximum", "multipleOf", "minItems",
                   "maxItems", "minProperties", "maxProperties", "required", "uniqueItems"})
_EMBEDDED = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}}
# a version the families load that the pinned release does not publish (NamespacedValidatingPolicy v1alpha1,
# MutatingAdmissionPolicy v1) is held to the schema of the nearest version that is published, newer first
_VERSIONS = ("v1alpha1", "v1beta1", "v1", "v2beta1", "v2")


class UnpublishedKind(LookupError):
    """A family claims a kind that no vendored schema covers: a programming error, found by the tests."""


@lru_cache(maxsize=None)
def _vendored(name: str) -> Mapping[str, Any]:
    with open(_FOLDER / name, "rb") as f:
        schemas: Mapping[str, Any] = json.load(f)["schemas"]
    return schemas


def from_openapi(node: Mapping[str, Any], structural: bool = True) -> dict[str, Any]:
    """A CRD's structural openAPIV3Schema node as JSON Schema 2020-12. `structural` is False inside
    anyOf/oneOf/allOf/not, whose branches only add value validations to the node that holds them."""
    out: dict[str, Any] = {k: v for k, v in node.items() if k in _KEPT}
    preserve = bool(node.get("x-kubernetes-preserve-unknown-fields"))
    if node.get("x-kubernetes-int-or-string"):
        out["type"] = ["integer", "string"]
    elif "type" in node:
        out["type"] = [node["type"], "null"] if node.get("nullable") else node["type"]
    if node.get("exclusiveMinimum") is True and "minimum" in out:  # OpenAPI 3.0's boolean form
        out["exclusiveMinimum"] = out.pop("minimum")
    if node.get("exclusiveMaximum") is True and "maximum" in out:
        out["exclusiveMaximum"] = out.pop("maximum")
    properties = {name: from_openapi(child, structural) for name, child in (node.get("properties") or {}).items()}
    if node.get("x-kubernetes-embedded-resource"):
        properties = {**_EMBEDDED, **properties}
    if properties:
        out["properties"] = properties
    extra = node.get("additionalProperties")
    if isinstance(extra, Mapping):
        out["additionalProperties"] = from_openapi(extra, structural)
    elif extra is False or (structural and properties and not preserve and extra is None):
        out["additionalProperties"] = False
    if isinstance(node.get("items"), Mapping):
        out["items"] = from_openapi(node["items"], structural)
    for keyword in ("anyOf", "oneOf", "allOf"):
        if keyword in node:
            out[keyword] = [from_openapi(branch, structural=False) for branch in node[keyword]]
    if isinstance(node.get("not"), Mapping):
        out["not"] = from_openapi(node["not"], structural=False)
    return out


def _nearest(schemas: Mapping[str, Any], api_version: str, kind: str) -> tuple[str, Any]:
    group, _, version = api_version.rpartition("/")
    if f"{api_version} {kind}" in schemas or version not in _VERSIONS:
        return api_version, schemas.get(f"{api_version} {kind}")
    at = _VERSIONS.index(version)
    for other in (*_VERSIONS[at + 1:], *reversed(_VERSIONS[:at])):
        if f"{group}/{other} {kind}" in schemas:
            return f"{group}/{other}", schemas[f"{group}/{other} {kind}"]
    return api_version, None


def published_schema(api_version: str, kind: str) -> dict[str, Any]:
    """The JSON Schema of a whole document of this kind, as its publisher defines it."""
    kubernetes = api_version.startswith("admissionregistration.k8s.io/")
    source, found = _nearest(_vendored("kubernetes.json" if kubernetes else "kyverno.json"), api_version, kind)
    if found is None:
        raise UnpublishedKind(f"no vendored schema for {api_version} {kind}")
    if kubernetes:
        schema = dict(found)
        if source != api_version:  # the same fields under another version
            schema["properties"] = {**schema["properties"], "apiVersion": {"const": api_version}}
    else:
        schema = from_openapi(found)
        schema["properties"]["apiVersion"] = {"const": api_version}
        schema["properties"]["kind"] = {"const": kind}
    return {"$schema": _DRAFT, **schema}
