"""Schemas of the third-party kinds the chart can render, which kubernetes-validate does not know.

Written for these tests from the projects' API references (cert-manager.io/v1 Certificate and Issuer,
monitoring.coreos.com/v1 ServiceMonitor). Each covers the fields the chart uses, plus their common
siblings, and refuses any other field (additionalProperties: false), so a misspelt or misplaced field
fails the test as it would fail `kubectl apply --validate=strict` against the real CRDs.
"""

from __future__ import annotations

from typing import Any

STRING = {"type": "string"}
NON_EMPTY = {"type": "string", "minLength": 1}
DURATION = {"type": "string", "pattern": r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"}  # Go time.Duration
PROM_DURATION = {"type": "string", "pattern": r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"}
LABELS = {"type": "object", "additionalProperties": STRING}
LABEL_SELECTOR = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "matchLabels": LABELS,
        "matchExpressions": {"type": "array", "items": {
            "type": "object", "additionalProperties": False, "required": ["key", "operator"],
            "properties": {"key": STRING, "operator": {"enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                           "values": {"type": "array", "items": STRING}}}},
    },
}
KEY_USAGES = ["signing", "digital signature", "content commitment", "key encipherment", "key agreement",
              "data encipherment", "cert sign", "crl sign", "encipher only", "decipher only", "any", "server auth",
              "client auth", "code signing", "email protection", "s/mime", "ipsec end system", "ipsec tunnel",
              "ipsec user", "timestamping", "ocsp signing", "microsoft sgc", "netscape sgc"]
ISSUER_REF = {"type": "object", "additionalProperties": False, "required": ["name"],
              "properties": {"name": NON_EMPTY, "kind": STRING, "group": STRING}}


def _object(api_version: str, kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object", "additionalProperties": False, "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {"apiVersion": {"const": api_version}, "kind": {"const": kind}, "metadata": {"type": "object"},
                       "spec": spec},
    }


CERTIFICATE = _object("cert-manager.io/v1", "Certificate", {
    "type": "object", "additionalProperties": False, "required": ["secretName", "issuerRef"],
    "properties": {
        "secretName": NON_EMPTY, "issuerRef": ISSUER_REF, "commonName": {"type": "string", "maxLength": 64},
        "dnsNames": {"type": "array", "items": NON_EMPTY}, "ipAddresses": {"type": "array", "items": STRING},
        "uris": {"type": "array", "items": STRING}, "duration": DURATION, "renewBefore": DURATION,
        "isCA": {"type": "boolean"}, "usages": {"type": "array", "items": {"enum": KEY_USAGES}},
        "revisionHistoryLimit": {"type": "integer", "minimum": 1},
        "secretTemplate": {"type": "object", "additionalProperties": False,
                           "properties": {"labels": LABELS, "annotations": LABELS}},
        "privateKey": {"type": "object", "additionalProperties": False, "properties": {
            "algorithm": {"enum": ["RSA", "ECDSA", "Ed25519"]}, "size": {"type": "integer"},
            "encoding": {"enum": ["PKCS1", "PKCS8"]}, "rotationPolicy": {"enum": ["Never", "Always"]}}},
    },
})

ISSUER = _object("cert-manager.io/v1", "Issuer", {
    "type": "object", "additionalProperties": False, "minProperties": 1, "maxProperties": 1,
    "properties": {
        "selfSigned": {"type": "object", "additionalProperties": False,
                       "properties": {"crlDistributionPoints": {"type": "array", "items": STRING}}},
        "ca": {"type": "object", "additionalProperties": False, "required": ["secretName"],
               "properties": {"secretName": NON_EMPTY, "crlDistributionPoints": {"type": "array", "items": STRING},
                              "ocspServers": {"type": "array", "items": STRING}}},
    },
})

SECRET_KEY_SELECTOR = {"type": "object", "additionalProperties": False, "required": ["key"],
                       "properties": {"name": STRING, "key": NON_EMPTY, "optional": {"type": "boolean"}}}
SECRET_OR_CONFIGMAP = {"type": "object", "additionalProperties": False, "maxProperties": 1,
                       "properties": {"secret": SECRET_KEY_SELECTOR, "configMap": SECRET_KEY_SELECTOR}}
ENDPOINT = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "port": STRING, "targetPort": {"type": ["integer", "string"]}, "path": STRING,
        "scheme": {"enum": ["http", "https", "HTTP", "HTTPS"]}, "interval": PROM_DURATION, "scrapeTimeout": PROM_DURATION,
        "honorLabels": {"type": "boolean"}, "honorTimestamps": {"type": "boolean"},
        "tlsConfig": {"type": "object", "additionalProperties": False, "properties": {
            "ca": SECRET_OR_CONFIGMAP, "cert": SECRET_OR_CONFIGMAP, "keySecret": SECRET_KEY_SELECTOR,
            "serverName": STRING, "insecureSkipVerify": {"type": "boolean"}}},
        "relabelings": {"type": "array", "items": {"type": "object"}},
        "metricRelabelings": {"type": "array", "items": {"type": "object"}},
    },
}
SERVICE_MONITOR = _object("monitoring.coreos.com/v1", "ServiceMonitor", {
    "type": "object", "additionalProperties": False, "required": ["selector"],
    "properties": {
        "jobLabel": STRING, "targetLabels": {"type": "array", "items": STRING},
        "selector": LABEL_SELECTOR, "endpoints": {"type": "array", "items": ENDPOINT},
        "namespaceSelector": {"type": "object", "additionalProperties": False, "properties": {
            "any": {"type": "boolean"}, "matchNames": {"type": "array", "items": STRING}}},
        "sampleLimit": {"type": "integer", "minimum": 0},
    },
})

SCHEMAS = {
    ("cert-manager.io/v1", "Certificate"): CERTIFICATE,
    ("cert-manager.io/v1", "Issuer"): ISSUER,
    ("monitoring.coreos.com/v1", "ServiceMonitor"): SERVICE_MONITOR,
}
