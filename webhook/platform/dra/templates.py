"""ResourceClaimTemplates (resource.k8s.io/v1) for rewritten legacy GPU requests, named by their content.

The same requests in the same namespace give the same name, so every pod that asks for, say, one
whole GPU shares one template, and creating it again is a harmless "already exists".
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping, Sequence

import orjson

from webhook.model.quickinit import frozen_dataclass
from webhook.platform.dra.config import DriverConfig, TemplateSettings, plain_json

API_VERSION = "resource.k8s.io/v1"
KIND = "ResourceClaimTemplate"
# The contract with the other batteries (the quota counts through these templates): documented in docs/dra.md
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "quartermaster"
LEGACY_ANNOTATION = "quartermaster.dev/legacy-resources"
HASH_LENGTH = 10
# what json.dumps(content, sort_keys=True, separators=(",", ":")) builds on every call, built once
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


@frozen_dataclass
class DeviceRequest:
    """One legacy key of one container, as the DRA request that replaces it."""

    legacy_name: str  # nvidia.com/gpu
    name: str  # the request's name inside the claim (a DNS label)
    device_class: str
    count: int
    selectors: tuple[str, ...] = ()
    driver_config: DriverConfig | None = None


def _unique_names(requests: Sequence[DeviceRequest]) -> list[str]:
    """Request names must be unique in a claim; two legacy keys may sanitize to the same label."""
    names: list[str] = []
    for request in requests:
        name, n = request.name, 2
        while name in names:
            suffix = f"-{n}"
            name, n = request.name[: 63 - len(suffix)].rstrip("-") + suffix, n + 1
        names.append(name)
    return names


def _request(name: str, request: DeviceRequest) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": request.device_class, "allocationMode": "ExactCount",
                               "count": request.count}
    if request.selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in request.selectors]
    return {"name": name, "exactly": exactly}


def _configs(names: Sequence[str], requests: Sequence[DeviceRequest]) -> list[dict[str, Any]]:
    """One opaque config per distinct driver configuration, naming the requests it applies to."""
    grouped: dict[str, tuple[DriverConfig, list[str]]] = {}
    for name, request in zip(names, requests):
        if request.driver_config is None:
            continue
        key = json.dumps([request.driver_config.driver, request.driver_config.parameters()], sort_keys=True)
        grouped.setdefault(key, (request.driver_config, []))[1].append(name)
    return [{"requests": members, "opaque": {"driver": config.driver, "parameters": config.parameters()}}
            for config, members in grouped.values()]


def claim_spec(requests: Sequence[DeviceRequest]) -> dict[str, Any]:
    """The ResourceClaimSpec: spec.devices.requests[].exactly and config[].opaque."""
    names = _unique_names(requests)
    devices: dict[str, Any] = {"requests": [_request(n, r) for n, r in zip(names, requests)]}
    configs = _configs(names, requests)
    if configs:
        devices["config"] = configs
    return {"devices": devices}


def canonical_json(content: Mapping[str, Any], plain: bool = False) -> bytes:
    """json.dumps(content, sort_keys=True, separators=(",", ":")).encode(), byte for byte.

    `plain`: the caller knows `content` is plain JSON (see plain_json; no float, whose text differs).
    Then orjson writes it, and its text is taken when it cannot differ from the standard encoder's:
    ASCII without any escape (no quote, backslash, control character or DEL in a string, all of which
    the two encoders escape differently), keys sorted alike (code point order is UTF-8 byte order)."""
    if plain:
        try:
            data = orjson.dumps(content, option=orjson.OPT_SORT_KEYS)
        except TypeError:  # a key that is no text, an integer beyond 64 bits: the standard encoder decides
            data = b"\\"
        if data.isascii() and b"\\" not in data and b"\x7f" not in data:
            return data
    return _CANONICAL.encode(content).encode()


def content_name(prefix: str, content: Mapping[str, Any], plain: bool = False) -> str:
    digest = hashlib.sha256(canonical_json(content, plain)).hexdigest()
    return f"{prefix}-{digest[:HASH_LENGTH]}"


def build_template(requests: Sequence[DeviceRequest], namespace: str, settings: TemplateSettings) -> dict[str, Any]:
    """The template, its name derived from everything else in it (so equal content means equal name)."""
    labels = dict(settings.labels)
    annotations = {LEGACY_ANNOTATION: ",".join(f"{r.legacy_name}={r.count}" for r in requests)}
    # the claims generated from the template carry the labels too, so they are recognisable as ours
    spec = {"metadata": {"labels": dict(labels)}, "spec": claim_spec(requests)}
    # counts are integers and names text: anything else can only come from the policy's labels or driver config
    plain = settings.plain_labels and all(r.driver_config is None or plain_json(r.driver_config.parameters())
                                        for r in requests)
    name = content_name(settings.name_prefix, {"labels": labels, "annotations": annotations, "spec": spec}, plain)
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name, "namespace": namespace, "labels": labels, "annotations": annotations},
        "spec": spec,
    }


def same_template(existing: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """An existing template with our name is ours unless someone edited its spec."""
    return existing.get("spec") == wanted.get("spec")
