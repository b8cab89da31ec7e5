"""The QueueAssignment document (quartermaster.dev/v1alpha1): JSON Schema, also the chart's CRD schema."""

from __future__ import annotations

from webhook.platform.base import document_schema

KIND = "QueueAssignment"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
USER_QUEUE_CHOICES = ["Keep", "Override", "Deny"]
LABEL_VALUE_PATTERN = "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"

_CLASS = {
    "type": "object",
    "additionalProperties": False,
    "required": ["queueName"],
    "properties": {
        # a LocalQueue in the profile's namespace; {namespace} and {class} may be used
        "queueName": {"type": "string", "minLength": 1},
        "userQueue": {"type": "string", "enum": USER_QUEUE_CHOICES},
        "allowedQueues": {"type": "array", "items": {"type": "string", "minLength": 1}},
    },
}

_WORKLOAD = {
    "type": "object",
    "additionalProperties": False,
    "required": ["kind"],
    "properties": {
        "apiVersion": {"type": "string", "minLength": 1},
        "kind": {"type": "string", "minLength": 1},
        "suspend": {"type": "boolean"},  # create it suspended (spec.suspend), for Kueue to unsuspend
    },
}

SCHEMA = document_schema(KIND, {
    "queueLabel": {"type": "string", "minLength": 1},
    "classLabel": {"type": "string", "minLength": 1},
    "defaultClass": {"type": "string", "minLength": 1},
    "userQueue": {"type": "string", "enum": USER_QUEUE_CHOICES},
    "classes": {"type": "object", "minProperties": 1, "additionalProperties": _CLASS},
    "workloads": {"type": "array", "minItems": 1, "items": _WORKLOAD},
    # the DeviceClasses Kueue's Configuration maps (resources.deviceClassMappings[*].deviceClassNames): a pod
    # queued with a claim on any other class is Inadmissible in Kueue and stays gated for good
    "mappedDeviceClasses": {"type": "array", "uniqueItems": True,
                            "items": {"type": "string", "minLength": 1, "maxLength": 253}},
}, required=["classes"])
