"""AdmissionReview admission.k8s.io/v1: decoding into a frozen request view, encoding responses."""

from __future__ import annotations

import base64
import json

import orjson
from dataclasses import field
from typing import Any, Mapping

from webhook.model.boundedjson import check_depth, decode_json, shallow_body
from webhook.model.errors import MalformedReview
from webhook.model.quickinit import frozen_dataclass
from webhook.model.shapes import shape_problem
from webhook.model.verdict import Verdict

API_VERSION = "admission.k8s.io/v1"
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})
_META_STRINGS = ("name", "namespace", "generateName", "uid", "resourceVersion", "creationTimestamp", "deletionTimestamp")


@frozen_dataclass(dict_init=True)
class GroupVersionKind:
    group: str
    version: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


@frozen_dataclass(dict_init=True)
class GroupVersionResource:
    group: str
    version: str
    resource: str


@frozen_dataclass(dict_init=True)
class UserInfo:
    username: str = ""
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)


@frozen_dataclass(dict_init=True)
class AdmissionRequest:
    """What the engine reads. The object dicts are shared, never mutated: mutators work on copies."""

    uid: str
    kind: GroupVersionKind
    resource: str
    sub_resource: str
    namespace: str
    name: str
    operation: str
    object: Mapping[str, Any] | None
    old_object: Mapping[str, Any] | None
    dry_run: bool
    user: UserInfo = field(default_factory=UserInfo)
    # as sent by the API server; None: the same as kind/resource/sub_resource (no conversion happened)
    request_kind: GroupVersionKind | None = None
    request_resource: GroupVersionResource | None = None
    request_sub_resource: str | None = None
    options: Mapping[str, Any] | None = None  # CreateOptions, UpdateOptions, DeleteOptions
    resource_group_version: tuple[str, str] | None = None  # request.resource's group and version; None: the kind's

    @property
    def gvr(self) -> GroupVersionResource:
        group, version = self.resource_group_version or (self.kind.group, self.kind.version)
        return GroupVersionResource(group, version, self.resource)

    @property
    def subject(self) -> Mapping[str, Any]:
        """The object the request is about: the new one, or the old one for DELETE."""
        return self.object if self.object is not None else (self.old_object or {})

    @property
    def object_name(self) -> str:
        meta = self.subject.get("metadata") or {}
        return self.name or meta.get("name") or meta.get("generateName") or ""


def _optional_str(req: Mapping[str, Any], key: str) -> str:
    value = req.get(key)
    if not (value is None or isinstance(value, str)):
        raise MalformedReview(f"request.{key} must be a string")
    return value or ""


def _optional_object(req: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    value = req.get(key)
    if not (value is None or isinstance(value, dict)):
        raise MalformedReview(f"request.{key} must be an object or null")
    return value


def _strings(values: list[Any]) -> bool:
    """Is every item a string (isinstance, one C-level pass: this runs on every review)?"""
    return all(map(str.__instancecheck__, values))


def _string_fields(value: dict[str, Any], first: str, second: str, third: str) -> bool:
    return isinstance(value.get(first, ""), str) and isinstance(value.get(second, ""), str) \
        and isinstance(value.get(third, ""), str)


def _gvk(req: Mapping[str, Any], key: str) -> GroupVersionKind | None:
    value = req.get(key)
    if value is None:
        return None
    if not isinstance(value, dict) or not _string_fields(value, "group", "version", "kind"):
        raise MalformedReview(f"request.{key} must be an object with string group, version and kind")
    return GroupVersionKind(value.get("group", ""), value.get("version", ""), value.get("kind", ""))


def _gvr(req: Mapping[str, Any], key: str) -> GroupVersionResource | None:
    value = req.get(key)
    if value is None:
        return None
    if not isinstance(value, dict) or not _string_fields(value, "group", "version", "resource"):
        raise MalformedReview(f"request.{key} must be an object with string group, version and resource")
    return _resource_of(value)


def _resource_of(value: Mapping[str, Any]) -> GroupVersionResource:
    """A resource object whose fields are checked to be strings; absent ones are empty."""
    return GroupVersionResource(value.get("group", ""), value.get("version", ""), value.get("resource", ""))


def _user(req: Mapping[str, Any]) -> UserInfo:
    user = req.get("userInfo")
    if user is None:
        user = {}
    elif not isinstance(user, dict):
        raise MalformedReview("request.userInfo must be an object")
    # `x or default` would let 0, false, [] and {} through as "no value": only null is
    username, uid = user.get("username"), user.get("uid")
    if not (username is None or isinstance(username, str)):
        raise MalformedReview("request.userInfo.username must be a string")
    if not (uid is None or isinstance(uid, str)):
        raise MalformedReview("request.userInfo.uid must be a string")
    groups = user.get("groups")
    if not (groups is None or (isinstance(groups, list) and _strings(groups))):
        raise MalformedReview("request.userInfo.groups must be a list of strings")
    extra = user.get("extra")
    if not (extra is None or (isinstance(extra, dict)
                              and all(isinstance(v, list) and _strings(v) for v in extra.values()))):
        raise MalformedReview("request.userInfo.extra must map names to lists of strings")
    return UserInfo(username or "", tuple(groups or ()), uid or "", {k: tuple(v) for k, v in (extra or {}).items()})


def _check_string_map(value: Any, where: str) -> None:
    if not (value is None or isinstance(value, dict)):
        raise MalformedReview(f"{where} must be an object of strings")
    for key, item in (value or {}).items():
        if not isinstance(item, str):
            raise MalformedReview(f"{where}[{key!r}] must be a string, got {type(item).__name__}")


def _check_object(obj: Mapping[str, Any] | None, where: str, shallow: bool = False) -> None:
    """The fields every policy reads without checking: once here, so that a policy never meets a
    metadata that is a list or a label that is a number (the API server would never send either).
    `shallow`: the depth is known to be in bounds already (shallow_body)."""
    if obj is None:
        return
    if not shallow:
        check_depth(obj, where)
    for key in ("apiVersion", "kind"):
        if not (obj.get(key) is None or isinstance(obj[key], str)):
            raise MalformedReview(f"{where}.{key} must be a string")
    for key in ("spec", "status"):
        if not (obj.get(key) is None or isinstance(obj[key], dict)):
            raise MalformedReview(f"{where}.{key} must be an object")
    meta = obj.get("metadata")
    if not (meta is None or isinstance(meta, dict)):
        raise MalformedReview(f"{where}.metadata must be an object")
    meta = meta or {}
    for key in _META_STRINGS:
        if not (meta.get(key) is None or isinstance(meta[key], str)):
            raise MalformedReview(f"{where}.metadata.{key} must be a string")
    _check_string_map(meta.get("labels"), f"{where}.metadata.labels")
    _check_string_map(meta.get("annotations"), f"{where}.metadata.annotations")
    owners = meta.get("ownerReferences")
    if not (owners is None or (isinstance(owners, list) and all(isinstance(o, dict) for o in owners))):
        raise MalformedReview(f"{where}.metadata.ownerReferences must be a list of objects")
    finalizers = meta.get("finalizers")
    if not (finalizers is None or (isinstance(finalizers, list) and all(isinstance(f, str) for f in finalizers))):
        raise MalformedReview(f"{where}.metadata.finalizers must be a list of strings")


def object_problem(obj: Mapping[str, Any], where: str, kind: str | None = None) -> str | None:
    """What `parse_review` would refuse in this object, for readers of files (`apply`) and of the API
    server (informers); None when fine. `kind`: what the object is known to be when it need not say (a
    List's items have no kind of their own); by default its own `kind` field."""
    try:
        _check_object(obj, where)
    except MalformedReview as exc:
        return str(exc)
    return shape_problem(kind if kind is not None else str(obj.get("kind", "")), obj, where)


def _check_identity(obj: Mapping[str, Any] | None, where: str, kind: str, namespace: str, name: str) -> None:
    """The API server sends the object it names: a review whose object is of another kind, namespace or
    name is not one it would send, and would make the state record one object while a quota reserved another."""
    if obj is None:
        return
    meta = obj.get("metadata") or {}
    if obj.get("kind") not in (None, kind):
        raise MalformedReview(f"{where}.kind {obj.get('kind')!r} differs from request.kind.kind {kind!r}")
    if meta.get("namespace") not in (None, "", namespace):
        raise MalformedReview(f"{where}.metadata.namespace {meta.get('namespace')!r} differs from "
                              f"request.namespace {namespace!r}")
    if name and meta.get("name") not in (None, "", name):
        raise MalformedReview(f"{where}.metadata.name {meta.get('name')!r} differs from request.name {name!r}")


def parse_review(body: bytes | bytearray | str) -> AdmissionRequest:
    """Decode an AdmissionReview body; every way it can be wrong raises MalformedReview with a reason."""
    doc = decode_json(body)
    if not isinstance(doc, dict):
        raise MalformedReview("body must be a JSON object (an AdmissionReview)")
    if doc.get("kind") != "AdmissionReview":
        raise MalformedReview("kind must be AdmissionReview")
    if doc.get("apiVersion") != API_VERSION:
        raise MalformedReview(f"apiVersion must be {API_VERSION}, got {doc.get('apiVersion')!r}")
    req = doc.get("request")
    if not isinstance(req, dict):
        raise MalformedReview("request is missing or not an object")
    uid = req.get("uid")
    if not isinstance(uid, str) or not uid:
        raise MalformedReview("request.uid must be a non-empty string")
    gvk = req.get("kind")
    if not isinstance(gvk, dict):
        raise MalformedReview("request.kind must be an object with group, version and kind")
    if not _string_fields(gvk, "group", "version", "kind"):
        for key in ("group", "version", "kind"):
            if not isinstance(gvk.get(key, ""), str):
                raise MalformedReview(f"request.kind.{key} must be a string")
    if not gvk.get("kind") or not gvk.get("version"):
        raise MalformedReview("request.kind needs version and kind")
    operation = req.get("operation")
    if not (isinstance(operation, str) and operation in OPERATIONS):
        raise MalformedReview(f"request.operation must be one of {sorted(OPERATIONS)}, got {operation!r}")
    resource = req.get("resource")
    if resource is None:
        resource = {}
    elif not isinstance(resource, dict):
        raise MalformedReview("request.resource must be an object")
    elif not _string_fields(resource, "group", "version", "resource"):
        bad = next(k for k in ("group", "version", "resource") if not isinstance(resource.get(k, ""), str))
        raise MalformedReview(f"request.resource.{bad} must be a string")
    dry_run = req.get("dryRun", False)
    if not (dry_run is None or isinstance(dry_run, bool)):
        raise MalformedReview("request.dryRun must be a boolean")
    user = _user(req)
    _optional_str(req, "requestSubResource")  # null or absent is "as subResource"; anything else but a string is wrong
    obj = _optional_object(req, "object")
    old = _optional_object(req, "oldObject")
    if operation != "DELETE" and obj is None:
        raise MalformedReview(f"request.object is required for {operation}")
    shallow = shallow_body(body)
    _check_object(obj, "request.object", shallow)
    _check_object(old, "request.oldObject", shallow)
    namespace, name = _optional_str(req, "namespace"), _optional_str(req, "name")
    _check_identity(obj, "request.object", gvk["kind"], namespace, name)
    _check_identity(old, "request.oldObject", gvk["kind"], namespace, name)
    for value, where in ((obj, "request.object"), (old, "request.oldObject")):
        problem = shape_problem(gvk["kind"], value, where) if value is not None else None
        if problem is not None:
            raise MalformedReview(problem)
    kind = GroupVersionKind(gvk.get("group", ""), gvk["version"], gvk["kind"])
    # the API server sends requestKind and requestResource equal to kind and resource unless it converted the
    # request (equal dicts hold the same strings, already checked): the same values, without building them twice
    request_kind = req.get("requestKind")
    request_resource = req.get("requestResource")
    return AdmissionRequest(
        uid=uid,
        kind=kind,
        resource=str(resource.get("resource", "")),
        sub_resource=_optional_str(req, "subResource"),
        namespace=namespace,
        name=name,
        operation=operation,
        object=obj,
        old_object=old,
        dry_run=bool(dry_run),
        user=user,
        request_kind=kind if request_kind == gvk and type(request_kind) is dict else _gvk(req, "requestKind"),
        request_resource=_resource_of(resource) if request_resource == resource and type(request_resource) is dict
        else _gvr(req, "requestResource"),
        request_sub_resource=req.get("requestSubResource") if isinstance(req.get("requestSubResource"), str) else None,
        options=_optional_object(req, "options"),
        resource_group_version=(str(resource.get("group", "")), str(resource.get("version", "")))
        if resource.get("version") else None,
    )


def _patch_json(patch: Any) -> bytes:
    try:
        return orjson.dumps(patch)  # a tuple is a JSON array to orjson
    except TypeError:  # an integer beyond 64 bits, copied from the object into the patch
        return json.dumps(list(patch), separators=(",", ":")).encode()


def encode_response(uid: str, verdict: Verdict) -> dict[str, Any]:
    """The AdmissionReview the API server accepts: uid echoed, patchType only beside a patch."""
    response: dict[str, Any] = {"uid": uid, "allowed": verdict.allowed}
    if verdict.patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(_patch_json(verdict.patch)).decode()
    if not verdict.allowed:
        response["status"] = {"code": verdict.code, "message": verdict.message, "reason": verdict.reason}
    if verdict.warnings:
        response["warnings"] = list(verdict.warnings)
    if verdict.audit_annotations:
        response["auditAnnotations"] = dict(verdict.audit_annotations)
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}
