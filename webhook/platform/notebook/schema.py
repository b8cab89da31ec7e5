"""JSON schema of the NotebookInjection policy kind (also the CRD schema the Helm chart renders).

Strict everywhere (additionalProperties: false), so a misspelt field is refused by the loader with its
file, line and the fields that are allowed. Defaults are applied by the compiler (notebook_config).
"""

from __future__ import annotations

from typing import Any

from webhook.platform.base import document_schema

KIND = "NotebookInjection"

_DNS_LABEL = {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 63}
_ENV_NAME = {"type": "string", "pattern": "^[-._a-zA-Z][-._a-zA-Z0-9]*$"}
_ABSOLUTE_PATH = {"type": "string", "pattern": "^/"}
_TEMPLATE = {"type": "string", "minLength": 1}
_STRATEGY = {"type": "string", "enum": ["Keep", "Override", "Reject"]}


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "additionalProperties": False, "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _template_list() -> dict[str, Any]:
    return {"type": "array", "items": _TEMPLATE}


def _env_list() -> dict[str, Any]:
    return {"type": "array", "items": _object({"name": _ENV_NAME, "value": {"type": "string"}}, ["name", "value"])}


_QUANTITIES = {"type": "object", "additionalProperties": {"type": ["string", "number"]}}

RESOURCES = _object({"requests": _QUANTITIES, "limits": _QUANTITIES})

SECURITY_CONTEXT = _object({
    "runAsUser": {"type": "integer", "minimum": 0},
    "runAsGroup": {"type": "integer", "minimum": 0},
    "runAsNonRoot": {"type": "boolean"},
    "allowPrivilegeEscalation": {"type": "boolean"},
    "readOnlyRootFilesystem": {"type": "boolean"},
    "capabilities": _object({"add": {"type": "array", "items": {"type": "string"}},
                             "drop": {"type": "array", "items": {"type": "string"}}}),
    "seccompProfile": _object({"type": {"type": "string", "enum": ["RuntimeDefault", "Localhost", "Unconfined"]},
                               "localhostProfile": {"type": "string"}}, ["type"]),
})

# The owner's storage: exactly one volume source, its strings templated on the owner.
HOME_VOLUME = {
    **_object({
        "hostPath": _object({"path": _TEMPLATE, "type": {"type": "string", "enum": [
            "", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice"]}},
            ["path"]),
        "csi": _object({"driver": {"type": "string", "minLength": 1}, "readOnly": {"type": "boolean"},
                        "fsType": {"type": "string"},
                        "volumeAttributes": {"type": "object", "additionalProperties": {"type": "string"}},
                        "nodePublishSecretRef": _object({"name": _TEMPLATE}, ["name"])}, ["driver"]),
        "persistentVolumeClaim": _object({"claimName": _TEMPLATE, "readOnly": {"type": "boolean"}}, ["claimName"]),
        "nfs": _object({"server": _TEMPLATE, "path": _TEMPLATE, "readOnly": {"type": "boolean"}}, ["server", "path"]),
    }),
    "minProperties": 1,
    "maxProperties": 1,
}

WORKSPACE = _object({
    "mountPath": _ABSOLUTE_PATH,
    "action": {"type": "string", "enum": ["Leave", "Relocate"]},
    "relocateTo": _ABSOLUTE_PATH,
})

HOME = _object({
    "volumeName": _DNS_LABEL,
    "volume": HOME_VOLUME,
    "mountPath": _TEMPLATE,
    "homePath": _TEMPLATE,  # HOME and workingDir, at or below mountPath (default: mountPath)
    "mountPropagation": {"type": "string", "enum": ["None", "HostToContainer"]},
    "readOnly": {"type": "boolean"},
    "homeEnv": {"anyOf": [_ENV_NAME, {"const": ""}]},
    "setWorkingDir": {"type": "boolean"},
    "workspace": WORKSPACE,
}, ["volume", "mountPath"])

PROBE = _object({
    "command": {**_template_list(), "minItems": 1},
    "initialDelaySeconds": {"type": "integer", "minimum": 0},
    "periodSeconds": {"type": "integer", "minimum": 1},
    "timeoutSeconds": {"type": "integer", "minimum": 1},
    "failureThreshold": {"type": "integer", "minimum": 1},
})

TOKEN = _object({
    "volumeName": _DNS_LABEL,
    "mountPath": _ABSOLUTE_PATH,
    "fileName": {"type": "string", "pattern": "^[^/]+$"},
    "sizeLimit": {"type": ["string", "number"]},
})

CREDENTIALS = _object({
    "volumeName": _DNS_LABEL,
    "secretName": _TEMPLATE,
    "mountPath": _ABSOLUTE_PATH,
    "defaultMode": {"type": "integer", "minimum": 0, "maximum": 511},
}, ["secretName"])

TOKEN_REFRESHER = _object({
    "sidecar": {"type": "string", "enum": ["Native", "Plain"]},
    "name": _DNS_LABEL,
    "image": {"type": "string", "minLength": 1},
    "imagePullPolicy": {"type": "string", "enum": ["Always", "IfNotPresent", "Never"]},
    "command": _template_list(),
    "args": _template_list(),
    "env": _env_list(),
    "refreshMarginSeconds": {"type": "integer", "minimum": 1},
    # the refresher runs as the notebook's uid (eosxd wants the token file owned by it): the uid of the
    # notebook container's or the pod's securityContext, else this (Kubeflow's images run as jovyan, 1000)
    "defaultNotebookUid": {"type": "integer", "minimum": 1},
    "resources": RESOURCES,
    "securityContext": SECURITY_CONTEXT,
    "startupProbe": PROBE,
    "token": TOKEN,
    "credentials": CREDENTIALS,
    "notebookEnv": _env_list(),
    "plainSidecarHold": _template_list(),  # [] for no hold
}, ["image", "credentials"])

_USER_NAMES = {"type": "array", "items": {"type": "string", "minLength": 1}}

_IDENTITY_RULE = _object({"source": {"type": "string", "enum": ["Owner", "Creator", "Fixed"]},
                         "user": {"type": "string", "minLength": 1}}, ["source"])

IDENTITY = _object({
    "classLabel": {"type": "string", "minLength": 1},
    "defaultClass": {"type": "string", "minLength": 1},
    "classes": {"type": "object", "additionalProperties": _IDENTITY_RULE},
    "unlistedClasses": _IDENTITY_RULE,
    "creatorAnnotation": {"type": "string", "minLength": 1},
    "onUnknown": {"type": "string", "enum": ["Deny", "Skip"]},
    "anonymousUsers": _USER_NAMES,  # e-mails that stand for "nobody authenticated": never an identity
    # who may write the links the identity is found through (trust.py): user names as the API server
    # authenticates them (system:serviceaccount:<namespace>:<name> for ServiceAccounts)
    "podCreators": {**_USER_NAMES, "minItems": 1},
    "notebookControllers": {**_USER_NAMES, "minItems": 1},
    "notebookWebApps": _USER_NAMES,
})

POD_SECURITY = _object({"defaultLevel": {"type": "string", "enum": ["privileged", "baseline", "restricted"]}})

OWNER = _object({
    "userPattern": {"type": "string", "minLength": 1},
    "onInvalid": {"type": "string", "enum": ["Deny", "Skip"]},
})

CONTAINERS = _object({
    "notebookLabel": {"type": "string", "minLength": 1},
    "select": {"type": "string", "enum": ["NotebookName", "All"]},
    "ignore": {"type": "array", "items": {"type": "string", "minLength": 1}},
})

MERGE = _object({"env": _STRATEGY, "volumes": _STRATEGY, "volumeMounts": _STRATEGY, "workingDir": _STRATEGY})

SCHEMA = document_schema(KIND, {
    "owner": OWNER,
    "identity": IDENTITY,
    "podSecurity": POD_SECURITY,
    "containers": CONTAINERS,
    "merge": MERGE,
    "home": HOME,
    "tokenRefresher": TOKEN_REFRESHER,
})
