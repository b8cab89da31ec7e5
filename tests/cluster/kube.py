"""Talking to the test control plane as users and platform engineers do: the real `kubernetes` client
(dynamic client, so CRDs work as built-in kinds do) and the kubectl of the same release."""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, TypeVar

import yaml
from kubernetes import client as kclient
from kubernetes import config as kconfig
from kubernetes import dynamic
from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

from tests.cluster.control import ClusterRecord

T = TypeVar("T")


def eventually(check: Callable[[], T], timeout: float = 60.0, interval: float = 0.25, message: str = "") -> T:
    """Poll until `check` returns something truthy; the last value, or an AssertionError naming what was awaited."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s: {message or check}")
        time.sleep(interval)


@dataclass(frozen=True)
class KubectlResult:
    returncode: int
    stdout: str
    stderr: str


class Kube:
    """One identity's view of the cluster: dynamic client plus kubectl, both with the same kubeconfig."""

    def __init__(self, record: ClusterRecord, kubeconfig: Path, qmcluster: Path) -> None:
        self.record = record
        self.kubeconfig = kubeconfig
        self._qmcluster = qmcluster
        configuration = kclient.Configuration()
        kconfig.load_kube_config(str(kubeconfig), client_configuration=configuration)
        # concurrent creates (the quota race) each hold a connection
        configuration.connection_pool_maxsize = 32
        api_client = kclient.ApiClient(configuration)
        self.api_client = api_client
        self.dynamic = dynamic.DynamicClient(api_client)
        self.core = kclient.CoreV1Api(api_client)

    def resource(self, api_version: str, kind: str):
        return self.dynamic.resources.get(api_version=api_version, kind=kind)

    def create(self, obj: Mapping[str, Any], namespace: str | None = None, **query: Any) -> dict[str, Any]:
        ns = namespace or obj.get("metadata", {}).get("namespace")
        created = self.resource(obj["apiVersion"], obj["kind"]).create(body=dict(obj), namespace=ns, **query)
        return created.to_dict()

    def apply_all(self, objects: Iterable[Mapping[str, Any]]) -> None:
        """Create each object, or replace it when it exists (server-side apply with a field manager)."""
        for obj in objects:
            resource = self.resource(obj["apiVersion"], obj["kind"])
            ns = obj.get("metadata", {}).get("namespace") if resource.namespaced else None
            resource.server_side_apply(body=dict(obj), namespace=ns, field_manager="quartermaster-tests",
                                       force_conflicts=True)

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        try:
            return self.resource(api_version, kind).get(name=name, namespace=namespace).to_dict()
        except NotFoundError:
            return None

    def list(self, api_version: str, kind: str, namespace: str | None = None, **query: Any) -> list[dict[str, Any]]:
        return [item.to_dict() for item in self.resource(api_version, kind).get(namespace=namespace, **query).items]

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None, **query: Any) -> None:
        try:
            self.resource(api_version, kind).delete(name=name, namespace=namespace, **query)
        except (NotFoundError, ResourceNotFoundError):
            pass

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True, timeout: float = 60) -> KubectlResult:
        result = subprocess.run([str(self._qmcluster), "kubectl", f"--kubeconfig={self.kubeconfig}", *args],
                                input=stdin, capture_output=True, text=True, timeout=timeout)
        outcome = KubectlResult(result.returncode, result.stdout, result.stderr)
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} exited {result.returncode}: {result.stderr.strip()}")
        return outcome

    def kubectl_create(self, *objects: Mapping[str, Any], extra: tuple[str, ...] = (), check: bool = True) -> KubectlResult:
        text = yaml.safe_dump_all([dict(o) for o in objects], sort_keys=False)
        return self.kubectl("create", "-f", "-", "-o", "json", *extra, stdin=text, check=check)

    def wait_pod(self, namespace: str, name: str, phase: str = "Running", timeout: float = 60) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            pod = self.get("v1", "Pod", name, namespace)
            return pod if pod and pod.get("status", {}).get("phase") == phase else None
        return eventually(reached, timeout, message=f"pod {namespace}/{name} {phase}")

    def token_for(self, namespace: str, service_account: str, seconds: int = 7200) -> str:
        request = kclient.AuthenticationV1TokenRequest(spec=kclient.V1TokenRequestSpec(
            audiences=[], expiration_seconds=seconds))
        answer = self.core.create_namespaced_service_account_token(service_account, namespace, request)
        return answer.status.token

    def events_for(self, namespace: str, name: str) -> list[dict[str, Any]]:
        return [e for e in self.list("v1", "Event", namespace)
                if e.get("involvedObject", {}).get("name") == name]

