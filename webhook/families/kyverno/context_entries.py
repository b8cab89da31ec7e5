"""A rule's context entries, loaded in order into its variables document: ``variable`` (value/jmesPath/default),
``configMap`` and ``apiCall`` answered by the cluster state through ``Lookups``, ``globalReference`` from global
context entries. ``imageRegistry`` needs a registry, which the offline engine does not have: it is an error
naming the entry. Each entry's source is chosen when the rule is compiled. Values supplied by a test (Kyverno
CLI ``values``) replace entries of the same name.
"""

from __future__ import annotations

import copy
import re
from typing import Any, Callable, Mapping, Protocol

from webhook.model.lookups import Lookups
from webhook.model.policy_scope import home_namespace
from webhook.model.quickinit import frozen_dataclass

from .context import set_dotted
from .jmespath_functions import query
from .jp_errors import MAX_TEXT, JMESPathError
from .variables import JsonContext, SubstitutionError, substitute_all


class ContextError(ValueError):
    """A context entry could not be loaded; the message names the entry."""


def load_entries(entries: tuple[ContextEntry, ...], ctx: JsonContext, lookups: Any,
                 overrides: Mapping[str, Any]) -> JsonContext:
    """Add each entry to the document (later entries see earlier ones); raises ContextError.

    What the entries hold together is bounded (MAX_TEXT characters, a value shared twice counted twice, as
    any rendering of it would be): entries that each double the last (Kyverno's GHSA-r2rj-wwm5-x6mq) built
    gigabytes and took the process down."""
    budget = MAX_TEXT
    for entry in entries:
        name = entry.name
        if name in overrides:
            ctx = _with_path(ctx, name, copy.deepcopy(overrides[name]))
            continue
        if any(key.startswith(name + ".") for key in overrides):
            continue  # the test set fields of this entry; base_document already placed them
        try:
            value = entry.source.load(name, ctx, lookups)
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


class EntrySource(Protocol):
    """Where one context entry's value comes from; raises ContextError, JMESPathError or SubstitutionError."""

    def load(self, name: str, ctx: JsonContext, lookups: Any) -> Any: ...


@frozen_dataclass
class ContextEntry:
    name: str
    source: EntrySource


@frozen_dataclass
class VariableSource:
    spec: Mapping[str, Any]

    def load(self, name: str, ctx: JsonContext, lookups: Any) -> Any:
        return _variable(self.spec, ctx)


@frozen_dataclass
class ConfigMapSource:
    spec: Mapping[str, Any]

    def load(self, name: str, ctx: JsonContext, lookups: Any) -> Any:
        spec = substitute_all(self.spec, ctx)
        # no namespace: the policy's own (a namespaced Policy), else `default`, as Kyverno reads it
        namespace = str(spec.get("namespace") or home_namespace(lookups))
        return _get(lookups, "v1", "ConfigMap", namespace, str(spec.get("name")), name)


@frozen_dataclass
class ApiCallSource:
    spec: Mapping[str, Any]

    def load(self, name: str, ctx: JsonContext, lookups: Any) -> Any:
        return _api_call(substitute_all(self.spec, ctx), ctx, lookups, name)


@frozen_dataclass
class GlobalReferenceSource:
    spec: Mapping[str, Any]

    def load(self, name: str, ctx: JsonContext, lookups: Any) -> Any:
        spec = substitute_all(self.spec, ctx)
        try:
            value = lookups.global_context(str(spec.get("name")))
        except (KeyError, AttributeError) as exc:
            raise ContextError(f"context entry {name!r}: global context {spec.get('name')!r} "
                               "is not defined") from exc
        return query(spec["jmesPath"], value) if spec.get("jmesPath") else value


@frozen_dataclass
class ImageRegistrySource:
    spec: Mapping[str, Any]

    def load(self, name: str, ctx: JsonContext, lookups: Any) -> Any:
        spec = substitute_all(self.spec, ctx)
        reference = str(spec.get("reference"))
        data = _lookup(lookups, name, f"image data for {reference}", lambda source: source.image_data(reference))
        return query(spec["jmesPath"], data) if spec.get("jmesPath") else data


@frozen_dataclass
class NoSource:
    """An entry naming no source Kyverno knows: its error when (and only when) it is loaded."""

    def load(self, name: str, ctx: JsonContext, lookups: Any) -> Any:
        raise ContextError(f"context entry {name!r} has no supported source")


def compile_entries(entries: Any) -> tuple[ContextEntry, ...]:
    """A rule's (or foreach entry's) context, each entry's source chosen here once, in Kyverno's order."""
    return tuple(ContextEntry(str(entry.get("name", "")), _source(entry)) for entry in entries or [])


def _source(entry: Mapping[str, Any]) -> EntrySource:
    if "variable" in entry:
        return VariableSource(entry["variable"] or {})
    for key, kind in (("configMap", ConfigMapSource), ("apiCall", ApiCallSource),
                      ("globalReference", GlobalReferenceSource), ("imageRegistry", ImageRegistrySource)):
        if key in entry:
            return kind(entry[key])  # type: ignore[no-any-return]
    return NoSource()


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


def _lookup(lookups: Lookups | None, entry: str, what: str, ask: Callable[[Lookups], Any]) -> Any:
    """What `ask` reads of the lookups; `what` names it in the errors."""
    if lookups is None:
        raise ContextError(f"context entry {entry!r}: no cluster state to answer for {what}")
    try:
        result = ask(lookups)
    except Exception as exc:  # LookupRefused and friends: the message says what was refused
        raise ContextError(f"context entry {entry!r}: {type(exc).__name__}: {exc}") from exc
    if result is None:
        raise ContextError(f"context entry {entry!r}: {what} not found")
    return result


def _get(lookups: Lookups | None, api_version: str, kind: str, namespace: str, name: str, entry: str) -> Any:
    what = f"{kind} {namespace + '/' if namespace else ''}{name}"
    return _lookup(lookups, entry, what, lambda source: source.get(api_version, kind, namespace, name))


def _api_call(spec: Mapping[str, Any], ctx: JsonContext, lookups: Any, entry: str) -> Any:
    if spec.get("service"):
        service = spec["service"]
        method, url, body = str(spec.get("method", "GET")), str(service.get("url")), _data_body(spec.get("data"))
        data = _lookup(lookups, entry, f"{method} {url}", lambda source: source.http(method, url, body))
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


def _rest_get(url: str, lookups: Any, entry: str) -> Any:
    match = _REST.match(url)
    if not match:
        raise ContextError(f"context entry {entry!r}: unsupported urlPath {url!r}")
    api_version = "v1" if match.group("core") else f"{match.group('group')}/{match.group('version')}"
    kind = kind_for_plural(match.group("plural"))
    namespace, name = match.group("ns") or "", match.group("name")
    if name:
        return _get(lookups, api_version, kind, namespace, name, entry)
    if lookups is None:
        raise ContextError(f"context entry {entry!r}: no cluster state to answer {url}")
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
