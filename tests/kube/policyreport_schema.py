"""The openAPIV3Schema of the wgpolicyk8s.io/v1alpha2 PolicyReport CRD (kubernetes-sigs/wg-policy-prototypes),
strict: kubernetes-validate knows no CRDs, so reports are checked against this instead."""

from typing import Any, Mapping

from jsonschema import Draft202012Validator

_OBJECT_REFERENCE = {
    "type": "object", "additionalProperties": False,
    "properties": {k: {"type": "string"} for k in ("apiVersion", "fieldPath", "kind", "name", "namespace",
                                                     "resourceVersion", "uid")},
}
_RESULT = {
    "type": "object", "additionalProperties": False, "required": ["policy"],
    "properties": {
        "category": {"type": "string"},
        "message": {"type": "string"},
        "policy": {"type": "string"},
        "properties": {"type": "object", "additionalProperties": {"type": "string"}},
        "resourceSelector": {"type": "object"},
        "resources": {"type": "array", "items": _OBJECT_REFERENCE},
        "result": {"enum": ["pass", "fail", "warn", "error", "skip"]},
        "rule": {"type": "string"},
        "scored": {"type": "boolean"},
        "severity": {"enum": ["critical", "high", "low", "medium", "info"]},
        "source": {"type": "string"},
        "timestamp": {"type": "object", "additionalProperties": False, "required": ["nanos", "seconds"],
                      "properties": {"nanos": {"type": "integer", "minimum": 0, "maximum": 999999999},
                                     "seconds": {"type": "integer"}}},
    },
}
SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["apiVersion", "kind", "metadata"],
    "properties": {
        "apiVersion": {"const": "wgpolicyk8s.io/v1alpha2"},
        "kind": {"enum": ["PolicyReport", "ClusterPolicyReport"]},
        "metadata": {"type": "object", "required": ["name"]},
        "scope": _OBJECT_REFERENCE,
        "scopeSelector": {"type": "object"},
        "summary": {"type": "object", "additionalProperties": False,
                    "properties": {k: {"type": "integer", "minimum": 0} for k in ("error", "fail", "pass", "skip", "warn")}},
        "results": {"type": "array", "items": _RESULT},
    },
}
_VALIDATOR = Draft202012Validator(SCHEMA)


def assert_valid_report(report: Mapping[str, Any]) -> None:
    errors = sorted(_VALIDATOR.iter_errors(dict(report)), key=lambda e: list(e.absolute_path))
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors]
    name = report["metadata"]["name"]
    assert len(name) <= 253 and name == name.lower()
