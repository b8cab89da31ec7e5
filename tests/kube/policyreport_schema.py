"""The openAPIV3Schemas of the report CRDs, strict: kubernetes-validate knows no CRDs, so reports are checked
against these instead. wgpolicyk8s.io/v1alpha2 PolicyReport (kubernetes-sigs/wg-policy-prototypes) and
openreports.io/v1alpha1 Report (openreports/reports-api, config/crd/openreports.io_reports.yaml and
apis/openreports.io/v1alpha1/report_types.go): the same results, summary, scope and scopeSelector; OpenReports
adds the report's own `source` and an optional `configuration` (limits: maxResults, statusFilter)."""

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
_STATUSES = ["pass", "fail", "warn", "error", "skip"]


def _report_schema(api_version: str, kinds: list[str], extra: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object", "additionalProperties": False, "required": ["apiVersion", "kind", "metadata"],
        "properties": {
            "apiVersion": {"const": api_version},
            "kind": {"enum": kinds},
            "metadata": {"type": "object", "required": ["name"]},
            "scope": _OBJECT_REFERENCE,
            "scopeSelector": {"type": "object"},
            "summary": {"type": "object", "additionalProperties": False,
                        "properties": {k: {"type": "integer", "minimum": 0} for k in _STATUSES}},
            "results": {"type": "array", "items": _RESULT},
            **extra,
        },
    }


SCHEMA = _report_schema("wgpolicyk8s.io/v1alpha2", ["PolicyReport", "ClusterPolicyReport"], {})
OPENREPORTS_SCHEMA = _report_schema("openreports.io/v1alpha1", ["Report", "ClusterReport"], {
    "source": {"type": "string"},
    "configuration": {
        "type": "object", "additionalProperties": False, "required": ["limits"],
        "properties": {"limits": {"type": "object", "additionalProperties": False, "properties": {
            "maxResults": {"type": "integer"}, "statusFilter": {"type": "array", "items": {"enum": _STATUSES}}}}}},
})
_VALIDATORS = {schema["properties"]["apiVersion"]["const"]: Draft202012Validator(schema)
               for schema in (SCHEMA, OPENREPORTS_SCHEMA)}


def assert_valid_report(report: Mapping[str, Any]) -> None:
    """Valid under the schema of its apiVersion (wgpolicyk8s.io/v1alpha2 or openreports.io/v1alpha1)."""
    validator = _VALIDATORS.get(report.get("apiVersion", ""), _VALIDATORS["wgpolicyk8s.io/v1alpha2"])
    errors = sorted(validator.iter_errors(dict(report)), key=lambda e: list(e.absolute_path))
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors]
    name = report["metadata"]["name"]
    assert len(name) <= 253 and name == name.lower()
