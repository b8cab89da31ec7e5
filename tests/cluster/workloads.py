"""Objects as users and Kubeflow write them, for the control-plane tests."""

from __future__ import annotations

import itertools
from typing import Any

from tests.cluster.kube import Kube, eventually

_serial = itertools.count(1)
IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_serial)}"


def profile_namespace(name: str, owner: str = "jdoe@example.org", profile_class: str | None = None) -> dict[str, Any]:
    """A Kubeflow profile namespace as the profile controller labels it."""
    labels = {"app.kubernetes.io/part-of": "kubeflow-profile"}
    if profile_class:
        labels["quartermaster.dev/profile-class"] = profile_class
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": labels, "annotations": {"owner": owner}}}


def make_profile(admin: Kube, prefix: str = "profile", **kwargs: Any) -> dict[str, Any]:
    """Create a fresh profile namespace and wait for its default ServiceAccount (pods need it)."""
    namespace = profile_namespace(unique(prefix), **kwargs)
    admin.create(namespace)
    name = namespace["metadata"]["name"]
    eventually(lambda: admin.get("v1", "ServiceAccount", "default", name), 30, message=f"{name}/default SA")
    # the prediction's state holds the namespace as the API server stores it (with its metadata.name label)
    namespace["metadata"]["labels"]["kubernetes.io/metadata.name"] = name
    return namespace


def container(name: str = "main", limits: dict[str, Any] | None = None, image: str = IMAGE) -> dict[str, Any]:
    resources: dict[str, Any] = {"limits": {"cpu": "1", "memory": "2Gi", **(limits or {})}}
    return {"name": name, "image": image, "command": ["sleep", "infinity"], "resources": resources}


def pod(name: str, namespace: str, limits: dict[str, Any] | None = None,
        annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if annotations:
        metadata["annotations"] = annotations
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                     "containers": [container(limits=limits)]}}


def pod_template(labels: dict[str, str], limits: dict[str, Any] | None = None,
                 restart: str = "Always") -> dict[str, Any]:
    return {"metadata": {"labels": labels},
            "spec": {"restartPolicy": restart, "terminationGracePeriodSeconds": 0,
                     "containers": [container(limits=limits)]}}


def deployment(name: str, namespace: str, limits: dict[str, Any] | None = None) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": pod_template(labels, limits)}}


def job(name: str, namespace: str, limits: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": namespace},
            "spec": {"backoffLimit": 0, "template": pod_template({"job": name}, limits, restart="Never")}}


def pods_of(admin: Kube, namespace: str, selector: str) -> list[dict[str, Any]]:
    return admin.list("v1", "Pod", namespace, label_selector=selector)
