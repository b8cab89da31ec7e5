"""The CEL activation as Kubernetes builds it for admission policies (`request`, `object`, `oldObject`,
`namespaceObject`), from the frozen request view. Plain JSON values, so any CEL backend can take them."""

from __future__ import annotations

from typing import Any, Mapping

from webhook.model.review import AdmissionRequest, GroupVersionKind, GroupVersionResource


def _gvk(gvk: GroupVersionKind) -> dict[str, str]:
    return {"group": gvk.group, "version": gvk.version, "kind": gvk.kind}


def _gvr(gvr: GroupVersionResource) -> dict[str, str]:
    return {"group": gvr.group, "version": gvr.version, "resource": gvr.resource}


def request_variable(request: AdmissionRequest) -> dict[str, Any]:
    """`request` as in Kubernetes' admission.k8s.io/v1 AdmissionRequest (field names and shapes)."""
    user: dict[str, Any] = {"username": request.user.username, "groups": list(request.user.groups)}
    if request.user.uid:
        user["uid"] = request.user.uid
    if request.user.extra:
        user["extra"] = {k: list(v) for k, v in request.user.extra.items()}
    out: dict[str, Any] = {
        "uid": request.uid,
        "kind": _gvk(request.kind),
        "resource": _gvr(request.gvr),
        "subResource": request.sub_resource,
        "requestKind": _gvk(request.request_kind or request.kind),
        "requestResource": _gvr(request.request_resource or request.gvr),
        "requestSubResource": request.sub_resource if request.request_sub_resource is None else request.request_sub_resource,
        "name": request.name,
        "namespace": request.namespace,
        "operation": request.operation,
        "userInfo": user,
        "dryRun": request.dry_run,
    }
    if request.options is not None:
        out["options"] = dict(request.options)
    return out


def admission_activation(request: AdmissionRequest, request_var: Mapping[str, Any], obj: Mapping[str, Any] | None,
                         namespace: Mapping[str, Any] | None) -> dict[str, Any]:
    """`namespaceObject` is null for cluster-scoped objects, as in Kubernetes."""
    return {
        "object": obj,
        "oldObject": request.old_object,
        "namespaceObject": namespace if request.namespace else None,
        "request": request_var,
    }
