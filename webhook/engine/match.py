"""Does a policy apply to a request? Cheap checks first; CEL conditions last."""

from __future__ import annotations

from typing import Any, Mapping

from webhook.model.cluster import CLUSTER_SCOPED
from webhook.model.policy import MatchSpec
from webhook.model.review import AdmissionRequest


def activation(request: AdmissionRequest, obj: Mapping[str, Any] | None, namespace: Mapping[str, Any] | None) -> dict[str, Any]:
    """The variables CEL match conditions see, named as in Kubernetes admission policies."""
    return {
        "object": obj,
        "oldObject": request.old_object,
        "namespaceObject": namespace,
        "request": {
            "uid": request.uid,
            "kind": {"group": request.kind.group, "version": request.kind.version, "kind": request.kind.kind},
            "resource": request.resource,
            "subResource": request.sub_resource,
            "name": request.name,
            "namespace": request.namespace,
            "operation": request.operation,
            "dryRun": request.dry_run,
            "userInfo": {"username": request.user.username, "groups": list(request.user.groups)},
        },
    }


def matches_statically(spec: MatchSpec, request: AdmissionRequest, obj: Mapping[str, Any] | None,
                       namespace: Mapping[str, Any] | None) -> bool:
    if request.sub_resource:
        return False
    if "*" not in spec.kinds and request.kind.kind not in spec.kinds:
        return False
    if request.operation not in spec.operations:
        return False
    subject = obj if obj is not None else (request.old_object or {})
    if request.kind.kind in CLUSTER_SCOPED and request.kind.kind != "Namespace":
        ns_name, ns_labels = "", None
    elif request.kind.kind == "Namespace":
        ns_name = (subject.get("metadata") or {}).get("name", "")
        ns_labels = (subject.get("metadata") or {}).get("labels")
    else:
        ns_name = request.namespace
        ns_labels = ((namespace or {}).get("metadata") or {}).get("labels")
    if spec.namespaces and ns_name not in spec.namespaces:
        return False
    if ns_name in spec.exclude_namespaces:
        return False
    if ns_labels is not None or request.kind.kind not in CLUSTER_SCOPED:
        if not spec.namespace_selector.matches(ns_labels):
            return False
    return spec.object_selector.matches((subject.get("metadata") or {}).get("labels"))


def matches_conditions(spec: MatchSpec, variables: Mapping[str, Any]) -> bool:
    """All conditions must hold; an evaluation error propagates so the failure policy decides."""
    return all(condition(variables) for condition in spec.conditions)
