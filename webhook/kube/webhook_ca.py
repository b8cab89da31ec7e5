"""The API side of certificate rotation: the Secret that holds the material, and the caBundle of the
webhook configurations that must trust it.

Writes are read-modify-write with the object's resourceVersion (PUT), so a concurrent change (a
`helm upgrade`, a second rotation) answers 409 Conflict instead of being overwritten. The Secret's
data keys are the cert dir's file names (ca.crt, ca.key, tls.crt, tls.key).
"""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any, Literal

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from webhook.kube.client import ApiStatus, KubeApi, KubeConfigError
from webhook.kube.resources import ResourceType
from webhook.model.quickinit import frozen_dataclass

SECRETS = ResourceType("Secret", "", "v1", "secrets", namespaced=True)
WEBHOOK_CONFIGURATIONS = {
    "mutating": ResourceType("MutatingWebhookConfiguration", "admissionregistration.k8s.io", "v1",
                             "mutatingwebhookconfigurations", namespaced=False),
    "validating": ResourceType("ValidatingWebhookConfiguration", "admissionregistration.k8s.io", "v1",
                               "validatingwebhookconfigurations", namespaced=False),
}
WebhookKind = Literal["mutating", "validating"]
CONFLICT_RETRIES = 3


class ApiCallFailed(ConnectionError):
    """The API server refused or could not be reached; the message says which object and why."""


@frozen_dataclass
class SecretData:
    namespace: str
    name: str
    data: dict[str, bytes]
    body: dict[str, Any]  # as read: carries the resourceVersion the write is conditional on


class WebhookCaClient:
    def __init__(self, api: KubeApi, timeout: float = 10.0) -> None:
        self.api = api
        self.timeout = timeout

    @classmethod
    def connect(cls, kubeconfig: Path | None, in_cluster: bool) -> "WebhookCaClient":
        try:
            return cls(KubeApi.connect(kubeconfig, in_cluster))
        except KubeConfigError as exc:
            raise ApiCallFailed(str(exc)) from None

    def close(self) -> None:
        self.api.close()

    def __enter__(self) -> "WebhookCaClient":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _call(self, what: str, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except ApiException as exc:
            raise ApiCallFailed(f"{what}: {ApiStatus.of(exc)}") from None
        except (HTTPError, OSError) as exc:
            raise ApiCallFailed(f"{what}: {exc}") from None

    def read_secret(self, namespace: str, name: str) -> SecretData:
        body = self._call(f"get secret {namespace}/{name}", self.api.get, SECRETS, namespace, name, self.timeout)
        if body is None:
            raise ApiCallFailed(f"secret {namespace}/{name} does not exist")
        data = {key: base64.b64decode(value) for key, value in (body.get("data") or {}).items()}
        return SecretData(namespace, name, data, body)

    def write_secret(self, secret: SecretData, data: dict[str, bytes]) -> None:
        """Replace the data; 409 Conflict (someone changed the Secret since it was read) is an error."""
        body = copy.deepcopy(secret.body)
        body["data"] = {key: base64.b64encode(value).decode() for key, value in sorted(data.items())}
        self._call(f"update secret {secret.namespace}/{secret.name}", self.api.replace, SECRETS, body, self.timeout)

    def ca_bundles(self, kind: WebhookKind, name: str) -> list[bytes]:
        """The caBundle of each webhook of the configuration ("" when unset)."""
        config = self._get_configuration(kind, name)
        return [base64.b64decode((w.get("clientConfig") or {}).get("caBundle") or "") for w in config.get("webhooks") or []]

    def set_ca_bundle(self, kind: WebhookKind, name: str, bundle: bytes) -> bool:
        """Point every webhook of the configuration at `bundle`; False when they already were."""
        encoded = base64.b64encode(bundle).decode()
        resource = WEBHOOK_CONFIGURATIONS[kind]
        for attempt in range(CONFLICT_RETRIES):
            config = self._get_configuration(kind, name)
            hooks = config.get("webhooks") or []
            if all((w.get("clientConfig") or {}).get("caBundle") == encoded for w in hooks):
                return False
            for hook in hooks:
                hook.setdefault("clientConfig", {})["caBundle"] = encoded
            try:
                self.api.replace(resource, config, self.timeout)
                return True
            except ApiException as exc:
                if exc.status != 409 or attempt == CONFLICT_RETRIES - 1:
                    raise ApiCallFailed(f"update {resource.kind} {name}: {ApiStatus.of(exc)}") from None
            except (HTTPError, OSError) as exc:
                raise ApiCallFailed(f"update {resource.kind} {name}: {exc}") from None
        return False  # unreachable: the last attempt returns or raises

    def _get_configuration(self, kind: WebhookKind, name: str) -> dict[str, Any]:
        resource = WEBHOOK_CONFIGURATIONS[kind]
        config = self._call(f"get {resource.kind} {name}", self.api.get, resource, "", name, self.timeout)
        if config is None:
            raise ApiCallFailed(f"{resource.kind} {name} does not exist")
        return config
