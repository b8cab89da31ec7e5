"""One read of the cluster for offline commands (`quartermaster apply --kubeconfig`): every object of the
kinds live mode watches, listed once, to seed an in-memory state. Nothing is ever written to the cluster:
the offline command then records what it admits in memory only, as with --state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException

from webhook.kube.client import KubeApi
from webhook.kube.resources import WATCHED

TIMEOUT = (5.0, 60.0)


def cluster_objects(kubeconfig: Path | None, in_cluster: bool) -> list[dict[str, Any]]:
    api = KubeApi.connect(kubeconfig, in_cluster)
    try:
        objects: list[dict[str, Any]] = []
        for resource in WATCHED:
            try:
                objects += api.list(resource, TIMEOUT).items
            except ApiException as exc:
                if exc.status == 404 and resource.optional:  # a CRD that is not installed (Kubeflow Profiles)
                    continue
                raise
        return objects
    finally:
        api.close()
