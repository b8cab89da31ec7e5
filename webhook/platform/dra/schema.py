"""The JSON schema of `DeviceClaimRewrite` documents (strict: unknown fields are refused on load).

What a schema cannot say (CEL that does not compile, quantities, placeholders in the wrong place)
is checked by the compiler in dra_policy.py, which names the field in its error.
"""

from __future__ import annotations

from typing import Any

from webhook.platform.base import document_schema

KIND_NAME = "DeviceClaimRewrite"

DNS_LABEL = "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
DNS_SUBDOMAIN = "^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
# resource names, annotation keys and label keys: an optional DNS prefix, a slash, a name
QUALIFIED_NAME = "^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
QUANTITY = {"type": ["string", "integer"]}  # parsed (and refused with the field name) by the compiler
CEL = {"type": "string", "minLength": 1, "maxLength": 10240}  # 10 KiB: the API server's limit for DRA CEL

_SHARING: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["strategy"],
    "properties": {
        "strategy": {"type": "string", "enum": ["TimeSlicing", "MPS"]},
        "timeSlicingConfig": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"interval": {"type": "string", "enum": ["Default", "Short", "Medium", "Long"]}},
        },
        "mpsConfig": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "defaultActiveThreadPercentage": {"type": "integer", "minimum": 1, "maximum": 100},
                "defaultPinnedDeviceMemoryLimit": QUANTITY,
                "defaultPerDevicePinnedMemoryLimit": {"type": "object", "additionalProperties": QUANTITY},
            },
        },
    },
}

_DRIVER_CONFIG: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "driver": {"type": "string", "pattern": DNS_SUBDOMAIN, "maxLength": 63},
        "apiVersion": {"type": "string", "minLength": 1},
        "kind": {"type": "string", "minLength": 1},
    },
}

_DEVICE: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["deviceClassName"],
    "properties": {
        "resourceName": {"type": "string", "pattern": QUALIFIED_NAME},
        "resourcePrefix": {"type": "string", "minLength": 1},
        "deviceClassName": {"type": "string", "pattern": DNS_SUBDOMAIN},
        "requestName": {"type": "string", "minLength": 1},
        "profileSuffixes": {"type": "object", "additionalProperties": {"type": "string"}},
        "selectors": {"type": "array", "maxItems": 30, "items": CEL},
        "sharing": _SHARING,
        "driverConfig": _DRIVER_CONFIG,
        "userChoices": {"type": "boolean"},
    },
}

_MODEL: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "selectors"],
    "properties": {
        "name": {"type": "string", "pattern": "^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"},
        "description": {"type": "string"},
        "selectors": {"type": "array", "minItems": 1, "items": CEL},
        "memory": QUANTITY,
    },
}

_USER_CHOICES: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "model": {
            "type": "object",
            "additionalProperties": False,
            "required": ["options"],
            "properties": {
                "annotation": {"type": "string", "pattern": QUALIFIED_NAME},
                "options": {"type": "array", "minItems": 1, "items": _MODEL},
            },
        },
        "minimumMemory": {
            "type": "object",
            "additionalProperties": False,
            "required": ["selector"],
            "properties": {
                "annotation": {"type": "string", "pattern": QUALIFIED_NAME},
                "selector": CEL,
                "maximum": QUANTITY,
            },
        },
    },
}

_TEMPLATES: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "namePrefix": {"type": "string", "pattern": DNS_SUBDOMAIN, "maxLength": 200},
        "labels": {"type": "object", "propertyNames": {"pattern": QUALIFIED_NAME},
                   "additionalProperties": {"type": "string", "pattern": "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$",
                                            "maxLength": 63}},
    },
}

SPEC_PROPERTIES: dict[str, Any] = {
    "strategy": {"type": "string", "enum": ["Claims", "Passthrough"]},
    "devices": {"type": "array", "minItems": 1, "items": _DEVICE},
    "userChoices": _USER_CHOICES,
    "templates": _TEMPLATES,
    "claimNamePrefix": {"type": "string", "pattern": DNS_LABEL, "maxLength": 40},
    "initContainerClaims": {"type": "string", "enum": ["Reuse", "Dedicated"]},
}

SCHEMA = document_schema(KIND_NAME, SPEC_PROPERTIES, required=["devices"])
