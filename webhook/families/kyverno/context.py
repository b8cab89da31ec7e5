"""The JSON document a Kyverno rule's variables read: the request, images, service account, context entries.

Context entries load in order: ``variable`` (value/jmesPath/default), ``configMap`` and ``apiCall`` answered by
the cluster state through ``Lookups``, ``globalReference`` from global context entries. ``imageRegistry`` needs
a registry, which the offline engine does not have: it is an error naming the entry. Values supplied by a
test (Kyverno CLI ``values``) replace entries of the same name and may set any dotted path (``request.operation``).
"""

from __future__ import annotations

import copy
import re
from dataclasses import field
from typing import Any, Mapping

from .images import extract_images
from .jmespath_functions import query
from .jp_errors import MAX_TEXT, JMESPathError
from .variables import JsonContext, SubstitutionError, substitute_all

from webhook.model.policy_scope import home_namespace
from webhook.model.quickinit import frozen_dataclass


class ContextError(ValueError):
    """A context entry could not be loaded; the message names the entry."""


@frozen_dataclass
class RequestSubject:
    username: str = ""
    groups: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    cluster_roles: tuple[str, ...] = ()
    uid: str = ""
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)


@frozen_dataclass
class RequestData:
    """One admission (or one resource of a test) as Kyverno's context sees it."""

    operation: str
    object: Mapping[str, Any] | None
    old_object: Mapping[str, Any] | None
    subject: RequestSubject = field(default_factory=RequestSubject)
    kind: Mapping[str, str] = field(default_factory=dict)
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    dry_run: bool = False
    overrides: Mapping[str, Any] = field(default_factory=dict)

    @property
    def resource(self) -> Mapping[str, Any]:
        return (self.old_object if self.operation == "DELETE" else self.object) or {}


def _user_info(subject: RequestSubject) -> dict[str, Any]:
    """As the API server marshals authentication/v1 UserInfo: empty fields are left out (omitempty)."""
    info: dict[str, Any] = {}
    if subject.username:
        info["username"] = subject.username
    if subject.uid:
        info["uid"] = subject.uid
    if subject.groups:
        info["groups"] = list(subject.groups)
    if subject.extra:
        info["extra"] = {key: list(values) for key, values in subject.extra.items()}
    return info


_BASE = object()   # memo key (RuleEnv.memo, the request's EvalContext.memo): (RequestData, its document)


def base_document(request: RequestData, overrides: Mapping[str, Any] | None = None,
                  memo: dict[Any, Any] | None = None) -> dict:
    """The document variables resolve against. Read only: every JsonContext that adds to it copies the maps on
    the way (with_values, load_entries), so the policies of one admission share the one built for it (`memo`)."""
    plain = not overrides and not request.overrides and memo is not None
    if plain:
        last = memo.get(_BASE)  # type: ignore[union-attr]
        if last is not None and last[0] is request:
            return last[1]  # type: ignore[no-any-return]
    doc = _base_document(request, overrides, memo)
    if plain:
        memo[_BASE] = (request, doc)  # type: ignore[index]
    return doc


def _base_document(request: RequestData, overrides: Mapping[str, Any] | None,
                   memo: dict[Any, Any] | None) -> dict:
    subject = request.subject
    doc: dict[str, Any] = {
        "request": {
            # read-only here: JMESPath never mutates, mutation works on its own copy
            "operation": request.operation, "object": request.object, "oldObject": request.old_object,
            "userInfo": _user_info(subject),
            "roles": list(subject.roles), "clusterRoles": list(subject.cluster_roles),
            "namespace": request.namespace, "name": request.name, "kind": dict(request.kind),
            "subResource": request.subresource, "dryRun": request.dry_run,
        },
        "images": extract_images(request.resource, memo),
    }
    match = re.match(r"^system:serviceaccount:([^:]+):([^:]+)$", subject.username)
    doc["serviceAccountName"] = match.group(2) if match else ""
    doc["serviceAccountNamespace"] = match.group(1) if match else ""
    for dotted, value in {**request.overrides, **(overrides or {})}.items():
        set_dotted(doc, dotted, value)
    return doc


_SEGMENT = re.compile(r'"([^"]*)"|([^.]+)')


def set_dotted(doc: dict, dotted: str, value: Any) -> None:
    """Set a.b."c.d", copying the maps on the way so shared request objects are never changed."""
    node = doc
    parts = [quoted or plain for quoted, plain in _SEGMENT.findall(dotted)]
    for part in parts[:-1]:
        child = node.get(part)
        node[part] = dict(child) if isinstance(child, dict) else {}
        node = node[part]
    node[parts[-1]] = copy.deepcopy(value)


def load_entries(entries: list[Mapping[str, Any]] | None, ctx: JsonContext, lookups: Any,
                 overrides: Mapping[str, Any]) -> JsonContext:
    """Add each entry to the document (later entries see earlier ones); raises ContextError.

    What the entries hold together is bounded (MAX_TEXT characters, a value shared twice counted twice, as
    any rendering of it would be): entries that each double the last (Kyverno's GHSA-r2rj-wwm5-x6mq) built
    gigabytes and took the process down."""
    budget = MAX_TEXT
    for entry in entries or []:
        name = str(entry.get("name", ""))
        if name in overrides:
            ctx = _with_path(ctx, name, copy.deepcopy(overrides[name]))
            continue
        if any(key.startswith(name + ".") for key in overrides):
            continue  # the test set fields of this entry; base_document already placed them
        try:
            value = _load_one(entry, ctx, lookups)
        except (JMESPathError, SubstitutionError) as exc:
            raise ContextError(f"context entry {name!r}: {exc}") from exc
        budget -= _size_within(value, budget)
        if budget < 0:
            raise ContextError(f"context entry {name!r}: the context entries would hold more than {MAX_TEXT} "
                               "characters")
        ctx = _with_path(ctx, name, value)
    return ctx


def _size_within(value: Any, budget: int) -> int:
    """The characters `value` renders to, roughly; stops counting once past `budget` (cost: at most that)."""
    size, stack = 0, [value]
    while stack and size <= budget:
        item = stack.pop()
        if isinstance(item, str):
            size += len(item) + 2
        elif isinstance(item, Mapping):
            size += 2 + sum(len(str(k)) + 4 for k in item)
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            size += 2 + len(item)
            stack.extend(item)
        else:
            size += 8
    return size


def _with_path(ctx: JsonContext, name: str, value: Any) -> JsonContext:
    data = dict(ctx.data)
    set_dotted(data, name, value) if "." in name else data.__setitem__(name, value)
    return JsonContext(data, ctx.delete, ctx.at_prefix)


def _load_one(entry: Mapping[str, Any], ctx: JsonContext, lookups: Any) -> Any:
    if "variable" in entry:
        return _variable(entry["variable"] or {}, ctx)
    if "configMap" in entry:
        spec = substitute_all(entry["configMap"], ctx)
        # no namespace: the policy's own (a namespaced Policy), else `default`, as Kyverno reads it
        namespace = str(spec.get("namespace") or home_namespace(lookups))
        return _lookup(lookups, "get", "v1", "ConfigMap", namespace, str(spec.get("name")), entry=entry)
    if "apiCall" in entry:
        return _api_call(substitute_all(entry["apiCall"], ctx), ctx, lookups, entry)
    if "globalReference" in entry:
        spec = substitute_all(entry["globalReference"], ctx)
        try:
            value = lookups.global_context(str(spec.get("name")))
        except (KeyError, AttributeError) as exc:
            raise ContextError(f"context entry {entry.get('name')!r}: global context {spec.get('name')!r} "
                               "is not defined") from exc
        return query(spec["jmesPath"], value) if spec.get("jmesPath") else value
    if "imageRegistry" in entry:
        spec = substitute_all(entry["imageRegistry"], ctx)
        data = _lookup(lookups, "image_data", str(spec.get("reference")), entry=entry)
        return query(spec["jmesPath"], data) if spec.get("jmesPath") else data
    raise ContextError(f"context entry {entry.get('name')!r} has no supported source")


def _variable(spec: Mapping[str, Any], ctx: JsonContext) -> Any:
    default = substitute_all(spec.get("default"), ctx) if "default" in spec else None
    try:
        value = substitute_all(spec.get("value"), ctx) if "value" in spec else None
        if spec.get("jmesPath"):
            path = substitute_all(spec["jmesPath"], ctx)
            value = query(path, value) if "value" in spec else ctx.resolve(path)
    except (JMESPathError, SubstitutionError):
        if "default" not in spec:
            raise
        value = None
    return default if value is None else value


def _lookup(lookups: Any, method: str, *args: Any, entry: Mapping[str, Any]) -> Any:
    if lookups is None:
        raise ContextError(f"context entry {entry.get('name')!r}: no cluster state to answer {method}")
    try:
        result = getattr(lookups, method)(*args)
    except Exception as exc:  # LookupRefused and friends: the message says what was refused
        raise ContextError(f"context entry {entry.get('name')!r}: {type(exc).__name__}: {exc}") from exc
    if result is None:
        raise ContextError(f"context entry {entry.get('name')!r}: {args[1] if len(args) > 1 else ''} "
                           f"{'/'.join(str(a) for a in args[2:] if a)} not found")
    return result


def _api_call(spec: Mapping[str, Any], ctx: JsonContext, lookups: Any, entry: Mapping[str, Any]) -> Any:
    if spec.get("service"):
        service = spec["service"]
        data = _lookup(lookups, "http", str(spec.get("method", "GET")), str(service.get("url")),
                       _data_body(spec.get("data")), entry=entry)
        if isinstance(data, Mapping) and set(data) == {"body", "statusCode"}:
            data = data["body"]  # a response envelope (a test's apiCallResponses): jmesPath reads the body
    else:
        data = _rest_get(str(spec.get("urlPath", "")), lookups, entry)
    if spec.get("jmesPath"):
        try:
            return query(spec["jmesPath"], data)
        except JMESPathError:
            if "default" in spec:
                return spec["default"]
            raise
    return data


def _data_body(items: Any) -> Any:
    return {str(i.get("key")): i.get("value") for i in items or []} if isinstance(items, list) else items


_REST = re.compile(r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
                   r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[^/?]+)(?:/(?P<name>[^/?]+))?")


def _rest_get(url: str, lookups: Any, entry: Mapping[str, Any]) -> Any:
    match = _REST.match(url)
    if not match:
        raise ContextError(f"context entry {entry.get('name')!r}: unsupported urlPath {url!r}")
    api_version = "v1" if match.group("core") else f"{match.group('group')}/{match.group('version')}"
    kind = kind_for_plural(match.group("plural"))
    namespace, name = match.group("ns") or "", match.group("name")
    if name:
        return _lookup(lookups, "get", api_version, kind, namespace, name, entry=entry)
    if lookups is None:
        raise ContextError(f"context entry {entry.get('name')!r}: no cluster state to answer {url}")
    items = lookups.list(api_version, kind, namespace)
    return {"apiVersion": api_version, "kind": f"{kind}List", "metadata": {}, "items": list(items)}


_IRREGULAR = {"ingresses": "Ingress", "networkpolicies": "NetworkPolicy", "endpoints": "Endpoints",
              "podsecuritypolicies": "PodSecurityPolicy", "storageclasses": "StorageClass",
              "priorityclasses": "PriorityClass", "ingressclasses": "IngressClass", "resourceclaims": "ResourceClaim",
              "poddisruptionbudgets": "PodDisruptionBudget", "resourcequotas": "ResourceQuota"}


def kind_for_plural(plural: str) -> str:
    """Kubernetes resource plural -> Kind for the common built-in types (configmaps -> ConfigMap)."""
    if plural in _IRREGULAR:
        return _IRREGULAR[plural]
    known = {"configmaps": "ConfigMap", "serviceaccounts": "ServiceAccount", "persistentvolumeclaims":
             "PersistentVolumeClaim", "persistentvolumes": "PersistentVolume", "replicasets": "ReplicaSet",
             "statefulsets": "StatefulSet", "daemonsets": "DaemonSet", "cronjobs": "CronJob",
             "rolebindings": "RoleBinding", "clusterrolebindings": "ClusterRoleBinding",
             "clusterroles": "ClusterRole", "limitranges": "LimitRange", "horizontalpodautoscalers":
             "HorizontalPodAutoscaler", "customresourcedefinitions": "CustomResourceDefinition"}
    if plural in known:
        return known[plural]
    if plural.endswith("ies"):
        singular = plural[:-3] + "y"
    elif plural.endswith(("sses", "ches", "shes", "xes")):  # computeclasses -> computeclass
        singular = plural[:-2]
    else:
        singular = plural[:-1] if plural.endswith("s") else plural
    return singular[:1].upper() + singular[1:]
