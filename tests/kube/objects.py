"""Objects as the API server stores them, for seeding the test API server."""

from __future__ import annotations

from typing import Any

PROFILE_LABELS = {"app.kubernetes.io/part-of": "kubeflow-profile"}


def namespace(name: str, profile: bool = True, klass: str | None = None, owner: str = "jdoe@example.org") -> dict[str, Any]:
    labels = dict(PROFILE_LABELS) if profile else {}
    if klass:
        labels["quartermaster.dev/profile-class"] = klass
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": labels, "annotations": {"owner": owner} if profile else {}}}


def pod(name: str, ns: str = "jdoe", gpus: int = 0, labels: dict[str, str] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "registry.example.org/train:1"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
            "spec": {"containers": [container]}}


def pvc(name: str, ns: str = "jdoe", size: str = "10Gi") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": ns},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}}


def claim_template(name: str, ns: str = "jdoe", device_class: str = "gpu.nvidia.com") -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"spec": {"devices": {"requests": [
                {"name": "gpu", "exactly": {"deviceClassName": device_class, "count": 1}}]}}}}


def profile(name: str, gpus: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"owner": {"kind": "User", "name": f"{name}@example.org"}}
    if gpus is not None:
        spec["resourceQuotaSpec"] = {"hard": {"requests.nvidia.com/gpu": gpus}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "Profile", "metadata": {"name": name}, "spec": spec}
