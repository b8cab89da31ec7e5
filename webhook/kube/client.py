"""The `kubernetes` client, used for raw JSON: every read and write returns plain dicts.

The typed models of the client lag behind the API (and drop fields they do not know), so reads ask
for the undecoded response (`_preload_content=False`) and decode the JSON here. Core kinds go
through CoreV1Api, every API group through CustomObjectsApi: both keep objects as they are.
The client is synchronous: callers run these methods in worker threads, never on the event loop.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.watch import Watch

from webhook import __version__
from webhook.kube.resources import ResourceType
from webhook.kube.settings import LiveSetupError
from webhook.model.quickinit import frozen_dataclass

Timeout = float | tuple[float, float]


class KubeConfigError(LiveSetupError):
    """The kubeconfig or in-cluster service account cannot be used."""


@frozen_dataclass
class ApiStatus:
    """What a failed call said: the HTTP code and the metav1.Status reason ("AlreadyExists", "Conflict", ...)."""

    code: int
    reason: str
    message: str

    @classmethod
    def of(cls, exc: ApiException) -> "ApiStatus":
        body: Any = exc.body
        try:
            status = json.loads(body.decode() if isinstance(body, bytes) else body) if body else {}
        except (ValueError, UnicodeDecodeError):
            status = {}
        if not isinstance(status, dict):
            status = {}
        return cls(int(exc.status or 0), str(status.get("reason") or exc.reason or ""),
                   str(status.get("message") or exc.reason or ""))

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}" if self.message else f"{self.code} {self.reason}"


def load_configuration(kubeconfig: Path | None, in_cluster: bool, pool_size: int = 32) -> client.Configuration:
    configuration = client.Configuration()
    try:
        if in_cluster:
            config.load_incluster_config(client_configuration=configuration)
        else:
            config.load_kube_config(config_file=str(kubeconfig) if kubeconfig else None,
                                    client_configuration=configuration)
    except (config.ConfigException, OSError, ValueError, TypeError) as exc:
        where = "the in-cluster service account" if in_cluster else f"kubeconfig {kubeconfig}"
        raise KubeConfigError(f"cannot use {where}: {exc}") from None
    configuration.retries = 0  # retries are ours: bounded by the admission deadline, with backoff
    configuration.connection_pool_maxsize = pool_size  # one long-lived connection per watch, plus writes
    if hasattr(configuration, "keep_alive"):
        configuration.keep_alive = True  # idle watches behind proxies and load balancers
    return configuration


def _snake(kind: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", kind).lower()


def _decode(response: Any) -> Any:
    data = response.data
    return json.loads(data) if data else {}


def _with_kind(obj: dict[str, Any], resource: ResourceType) -> dict[str, Any]:
    """List items come without apiVersion/kind; the ClusterState keys objects by kind."""
    obj.setdefault("apiVersion", resource.api_version)
    obj.setdefault("kind", resource.kind)
    return obj


@frozen_dataclass
class ObjectList:
    items: list[dict[str, Any]]
    resource_version: str


class KubeApi:
    """Blocking calls on raw JSON; every method takes a timeout (seconds, or (connect, read))."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.api_client = api_client
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)

    @classmethod
    def connect(cls, kubeconfig: Path | None, in_cluster: bool) -> "KubeApi":
        api_client = client.ApiClient(load_configuration(kubeconfig, in_cluster))
        # the API server names the field manager of what we write after it (managedFields, audit logs)
        api_client.user_agent = f"quartermaster/{__version__}"
        return cls(api_client)

    def close(self) -> None:
        self.api_client.close()

    # --- building one call ------------------------------------------------------------------
    def _collection(self, resource: ResourceType, namespace: str, verb: str) -> Callable[..., Any]:
        """A function for `verb` (list, create) on a collection: all namespaces when namespace is ""."""
        if resource.core:
            snake = _snake(resource.kind)
            if not resource.namespaced:
                return getattr(self.core, f"{verb}_{snake}")
            if not namespace and verb == "list":
                return getattr(self.core, f"list_{snake}_for_all_namespaces")
            method = getattr(self.core, f"{verb}_namespaced_{snake}")
            return lambda **kw: method(namespace=namespace, **kw)
        where = (resource.group, resource.version)
        if resource.namespaced and namespace:
            method = getattr(self.custom, f"{verb}_namespaced_custom_object")
            return lambda **kw: method(*where, namespace, resource.plural, **kw)
        method = getattr(self.custom, f"{verb}_cluster_custom_object")
        return lambda **kw: method(*where, resource.plural, **kw)

    def _item(self, resource: ResourceType, namespace: str, name: str, verb: str) -> Callable[..., Any]:
        """A function for `verb` (read/get, replace, delete) on one object."""
        if resource.core:
            snake = _snake(resource.kind)
            core_verb = "read" if verb == "get" else verb
            if not resource.namespaced:
                method = getattr(self.core, f"{core_verb}_{snake}")
                return lambda **kw: method(name=name, **kw)
            method = getattr(self.core, f"{core_verb}_namespaced_{snake}")
            return lambda **kw: method(name=name, namespace=namespace, **kw)
        where = (resource.group, resource.version)
        if resource.namespaced:
            method = getattr(self.custom, f"{verb}_namespaced_custom_object")
            return lambda **kw: method(*where, namespace, resource.plural, name, **kw)
        method = getattr(self.custom, f"{verb}_cluster_custom_object")
        return lambda **kw: method(*where, resource.plural, name, **kw)

    # --- reads -------------------------------------------------------------------------------
    def list(self, resource: ResourceType, timeout: Timeout, namespace: str = "",
             label_selector: str | None = None) -> ObjectList:
        kwargs: dict[str, Any] = {"_preload_content": False, "_request_timeout": timeout}
        if label_selector:
            kwargs["label_selector"] = label_selector
        body = _decode(self._collection(resource, namespace, "list")(**kwargs))
        items = [_with_kind(item, resource) for item in body.get("items") or []]
        return ObjectList(items, str((body.get("metadata") or {}).get("resourceVersion", "")))

    def list_pages(self, resource: ResourceType, timeout: Timeout, limit: int) -> Iterator[ObjectList]:
        """Every object of `resource` in pages of at most `limit` (the API server's limit/continue, one snapshot):
        a large cluster's pods are never decoded all at once. An expired continue token raises ApiException 410.
        Each page carries the snapshot's resourceVersion."""
        token = ""
        while True:
            kwargs: dict[str, Any] = {"_preload_content": False, "_request_timeout": timeout, "limit": limit}
            if token:
                kwargs["_continue"] = token
            body = _decode(self._collection(resource, "", "list")(**kwargs))
            metadata = body.get("metadata") or {}
            yield ObjectList([_with_kind(item, resource) for item in body.get("items") or []],
                             str(metadata.get("resourceVersion", "")))
            token = str(metadata.get("continue") or "")
            if not token:
                return

    def get(self, resource: ResourceType, namespace: str, name: str, timeout: Timeout) -> dict[str, Any] | None:
        try:
            return _with_kind(_decode(self._item(resource, namespace, name, "get")(
                _preload_content=False, _request_timeout=timeout)), resource)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def watch(self, resource: ResourceType, resource_version: str, server_timeout: int, timeout: Timeout,
              watcher: Watch, on_open: Callable[[], None] | None = None) -> Iterator[Mapping[str, Any]]:
        """Raw watch events from `resource_version`, bookmarks included. An ERROR event (410 Gone when the
        version is too old) raises ApiException with its code; the stream ends when the server closes it.
        `on_open` is called once the server accepted the watch (status and headers received)."""
        list_fn = self._collection(resource, "", "list")

        def raw(**kwargs: Any) -> Any:  # no return annotation: Watch then leaves objects as dicts
            response = list_fn(**kwargs)
            if on_open is not None:
                on_open()
            return response

        yield from watcher.stream(raw, resource_version=resource_version, allow_watch_bookmarks=True,
                                  timeout_seconds=server_timeout, _request_timeout=timeout)

    # --- writes ------------------------------------------------------------------------------
    def create(self, resource: ResourceType, body: Mapping[str, Any], timeout: Timeout) -> dict[str, Any]:
        namespace = str((body.get("metadata") or {}).get("namespace", "")) if resource.namespaced else ""
        created = self._collection(resource, namespace, "create")(
            body=dict(body), _preload_content=False, _request_timeout=timeout)
        return _with_kind(_decode(created), resource)

    def replace(self, resource: ResourceType, body: Mapping[str, Any], timeout: Timeout) -> dict[str, Any]:
        """PUT with the body's metadata.resourceVersion: a concurrent change answers 409 Conflict."""
        meta = body.get("metadata") or {}
        namespace = str(meta.get("namespace", "")) if resource.namespaced else ""
        replaced = self._item(resource, namespace, str(meta.get("name", "")), "replace")(
            body=dict(body), _preload_content=False, _request_timeout=timeout)
        return _with_kind(_decode(replaced), resource)

    def patch_status(self, resource: ResourceType, namespace: str, name: str, status: Mapping[str, Any],
                     timeout: Timeout) -> dict[str, Any]:
        """A JSON merge patch of the status subresource of a custom object (a policy's conditions)."""
        where = (resource.group, resource.version)
        if resource.namespaced:
            call = self.custom.patch_namespaced_custom_object_status
            patched = call(*where, namespace, resource.plural, name, body={"status": dict(status)},
                           _content_type="application/merge-patch+json", _preload_content=False, _request_timeout=timeout)
        else:
            call = self.custom.patch_cluster_custom_object_status
            patched = call(*where, resource.plural, name, body={"status": dict(status)},
                           _content_type="application/merge-patch+json", _preload_content=False, _request_timeout=timeout)
        return _with_kind(_decode(patched), resource)

    def delete(self, resource: ResourceType, namespace: str, name: str, timeout: Timeout) -> bool:
        try:
            self._item(resource, namespace, name, "delete")(_preload_content=False, _request_timeout=timeout)
            return True
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise


def explain_error(exc: BaseException, missing: str = "wgpolicyk8s.io/v1alpha2 PolicyReports") -> str:
    """One line for a person: what failed talking to the cluster. `missing`: what a 404 says is not served."""
    if isinstance(exc, KubeConfigError):
        return str(exc)
    if isinstance(exc, ApiException):
        status = ApiStatus.of(exc)
        if status.code == 404:
            return f"the cluster does not serve {missing} (is the CRD installed?)"
        if status.code in (401, 403):
            return f"the cluster refused the request ({status}); see docs/live.md for the RBAC this needs"
        return f"the cluster answered {status}"
    if isinstance(exc, OSError) or type(exc).__module__.startswith("urllib3"):
        return f"cannot reach the cluster: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return f"{type(exc).__name__}: {exc}"
