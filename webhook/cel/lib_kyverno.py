"""Kyverno's CEL libraries as the policy corpus uses them.

Calls that need data beyond the request (`resource.Get/List`, `globalContext.Get`, `http.*`,
`image.GetMetadata`) go through the `Lookups` of the current evaluation; `http` is refused unless the
Lookups answers (a test supplies it). `generator.Apply` records objects to create after admission.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import random as _random
import re
import string as _string
from typing import Any, Mapping, Sequence

from webhook.cel import cost
from webhook.cel.functions import Library, current, fn
from webhook.cel.lib_image import IMAGE
from webhook.cel.values import json_value, plain
from webhook.model import boundedyaml
from webhook.model.apiresources import lookup

# Kyverno addresses resources by plural; Lookups by kind. Irregular plurals and camel-cased kinds here.
_KINDS = {
    "configmaps": "ConfigMap", "secrets": "Secret", "pods": "Pod", "namespaces": "Namespace",
    "services": "Service", "serviceaccounts": "ServiceAccount", "endpoints": "Endpoints",
    "persistentvolumeclaims": "PersistentVolumeClaim", "persistentvolumes": "PersistentVolume",
    "resourcequotas": "ResourceQuota", "limitranges": "LimitRange", "nodes": "Node", "events": "Event",
    "deployments": "Deployment", "statefulsets": "StatefulSet", "daemonsets": "DaemonSet",
    "replicasets": "ReplicaSet", "jobs": "Job", "cronjobs": "CronJob", "ingresses": "Ingress",
    "ingressclasses": "IngressClass", "networkpolicies": "NetworkPolicy", "poddisruptionbudgets": "PodDisruptionBudget",
    "horizontalpodautoscalers": "HorizontalPodAutoscaler", "roles": "Role", "rolebindings": "RoleBinding",
    "clusterroles": "ClusterRole", "clusterrolebindings": "ClusterRoleBinding", "storageclasses": "StorageClass",
    "priorityclasses": "PriorityClass", "resourceclaims": "ResourceClaim",
    "resourceclaimtemplates": "ResourceClaimTemplate", "deviceclasses": "DeviceClass",
    "customresourcedefinitions": "CustomResourceDefinition", "leases": "Lease",
}


def _marshal(value: Any) -> str:
    """Its cost is its output's: charged once made (a value is at most a request's size, so one call is bounded;
    the calls after it find the budget spent)."""
    text = json.dumps(plain(value), separators=(",", ":"), sort_keys=True)
    cost.result_size(len(text), "json.marshal")
    return text


def kind_for(resource: str) -> str:
    """Plural resource name to kind; a name that already looks like a kind passes through."""
    if resource in _KINDS:
        return _KINDS[resource]
    if resource[:1].isupper():
        return resource
    if resource.endswith("ies"):
        singular = resource[:-3] + "y"
    elif resource.endswith(("sses", "ches", "shes", "xes")):  # computeclasses -> computeclass
        singular = resource[:-2]
    else:
        singular = resource[:-1] if resource.endswith("s") else resource
    return singular[:1].upper() + singular[1:]


def _lookups(call: str) -> Any:
    lookups = current().lookups
    if lookups is None:
        raise LookupError(f"{call}: no cluster data is available to this evaluation")
    return lookups


def resource_get(api_version: str, resource: str, namespace: str, name: str) -> Any:
    found = _lookups("resource.Get").get(api_version, kind_for(resource), namespace, name)
    if found is None:
        raise LookupError(f"resource.Get: {resource} {namespace + '/' if namespace else ''}{name} not found")
    return plain(found)


def resource_list(api_version: str, resource: str, namespace: str) -> dict[str, Any]:
    kind = kind_for(resource)
    items = _lookups("resource.List").list(api_version, kind, namespace)
    return {"apiVersion": api_version, "kind": f"{kind}List", "items": [plain(i) for i in items]}


def to_gvr(api_version: str, kind: str) -> dict[str, str]:
    """Kyverno's `resource.ToGVR`: the group, version and resource (plural) of a kind, for `resource.get/list`."""
    found = lookup(api_version, kind)
    return {"group": found.group, "version": found.version, "resource": found.resource}


def _gvr_api_version(gvr: Mapping[str, Any]) -> str:
    group, version = str(gvr.get("group") or ""), str(gvr.get("version") or "")
    return f"{group}/{version}" if group else version


def resource_get_gvr(gvr: Mapping[str, Any], namespace: str, name: str) -> Any:
    return resource_get(_gvr_api_version(gvr), str(gvr.get("resource") or ""), namespace, name)


def resource_list_gvr(gvr: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    return resource_list(_gvr_api_version(gvr), str(gvr.get("resource") or ""), namespace)


def global_context(name: str, projection: str = "") -> Any:
    try:
        value = _lookups("globalContext.Get").global_context(name)
    except KeyError:
        raise LookupError(f"globalContext.Get: no global context entry named {name!r}") from None
    if projection:
        if not isinstance(value, Mapping) or projection not in value:
            raise LookupError(f"globalContext.Get: entry {name!r} has no projection {projection!r}")
        value = value[projection]
    return plain(value)


def http_call(method_name: str):
    def call(url: str, *rest: Any) -> Any:
        body = rest[0] if method_name == "POST" and rest else None
        return plain(_lookups(f"http.{method_name.title()}").http(method_name, url, body))
    return call


def image_data(ref: str) -> Any:
    return plain(_lookups("image.GetMetadata").image_data(ref))


def generate(namespace: str, objects: Sequence[Mapping[str, Any]]) -> bool:
    """Kyverno's generator.Apply: true, so it can stand in `all(...)`; a *List (resource.List) brings its items."""
    sink = current().generated
    if sink is None:
        raise LookupError("generator.Apply: generated objects are only collected for generating policies")
    for obj in objects:
        items = obj.get("items") if str(obj.get("kind", "")).endswith("List") else None
        for item in items if isinstance(items, list) else [obj]:
            created = json_value(item, "a generated object")  # sent to the API server: JSON, as cel-go converts it
            if namespace:
                created.setdefault("metadata", {})["namespace"] = namespace
            sink.append(created)
    return True


def parse_service_account(user: str) -> dict[str, str]:
    prefix = "system:serviceaccount:"
    namespace = name = ""
    if user.startswith(prefix) and ":" in user[len(prefix):]:
        namespace, name = user[len(prefix):].split(":", 1)
    return {"Namespace": namespace, "Name": name}


def _random_string(pattern: str = "[0-9a-z]{8}") -> str:
    """Strings of the shape `[class]{n}` repeated, the regular expressions Kyverno's random() is used with."""
    out = []
    for match in re.finditer(r"\[([^\]]+)\](?:\{(\d+)\})?|\\?(.)", pattern):
        if match[1] is None:
            out.append(match[3])
            continue
        count = int(match[2] or 1)
        if count > 4096:
            raise ValueError(f"random: {count} characters asked for, at most 4096")
        chars = _expand_class(match[1])
        out.extend(_random.choice(chars) for _ in range(count))
    return "".join(out)


def _expand_class(klass: str) -> str:
    chars = []
    for start, end, single in re.findall(r"(.)-(.)|(.)", klass):
        if start:
            chars.extend(chr(c) for c in range(ord(start), ord(end) + 1))
        else:
            chars.append(single)
    return "".join(chars) or _string.ascii_lowercase


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


def _truncate(ts: datetime.datetime, unit: datetime.timedelta) -> datetime.datetime:
    if unit <= datetime.timedelta(0):
        return ts
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return ts - (ts - epoch) % unit


def _hash(algorithm: str):
    return lambda text: hashlib.new(algorithm, text.encode()).hexdigest()


KYVERNO = Library("kyverno", (
    fn("resource.Get", ["string", "string", "string", "string"], "dyn", resource_get),
    fn("resource.List", ["string", "string", "string"], "map", resource_list),
    fn("globalContext.Get", ["string"], "dyn", global_context),
    fn("globalContext.Get", ["string", "string"], "dyn", global_context),
    fn("http.Get", ["string"], "dyn", http_call("GET")),
    fn("http.Get", ["string", "map"], "dyn", http_call("GET")),
    fn("http.Post", ["string", "dyn"], "dyn", http_call("POST")),
    fn("http.Post", ["string", "dyn", "map"], "dyn", http_call("POST")),
    fn("image.GetMetadata", ["string"], "dyn", image_data),
    fn("imagedata.Get", ["string"], "dyn", image_data),
    fn("generator.Apply", ["string", "list"], "bool", generate),
    # the lower-case spellings Kyverno also accepts (its own CLI test suites use them)
    fn("resource.get", ["string", "string", "string", "string"], "dyn", resource_get),
    fn("resource.list", ["string", "string", "string"], "map", resource_list),
    # a kind's group/version/resource, and the lookups that take it (Kyverno 1.18+)
    fn("resource.ToGVR", ["string", "string"], "map", to_gvr),
    fn("resource.toGVR", ["string", "string"], "map", to_gvr),
    fn("resource.Get", ["map", "string", "string"], "dyn", resource_get_gvr),
    fn("resource.get", ["map", "string", "string"], "dyn", resource_get_gvr),
    fn("resource.List", ["map", "string"], "map", resource_list_gvr),
    fn("resource.list", ["map", "string"], "map", resource_list_gvr),
    fn("generator.apply", ["string", "list"], "bool", generate),
    fn("parseServiceAccount", ["string"], "map", parse_service_account),
    fn("json.unmarshal", ["string"], "dyn", json.loads),
    fn("json.marshal", ["dyn"], "string", _marshal),
    fn("yaml.parse", ["string"], "dyn", boundedyaml.safe_load),  # request text: no alias bombs, no endless lists
    fn("time.now", [], "timestamp", _now),
    fn("time.truncate", ["timestamp", "duration"], "timestamp", _truncate),
    fn("sha1", ["string"], "string", _hash("sha1")),
    fn("sha256", ["string"], "string", _hash("sha256")),
    fn("md5", ["string"], "string", _hash("md5")),
    # Kyverno 1.18+ also declares these spellings (its sdk's libs: hash, globalcontext, http)
    fn("hash.sha1", ["string"], "string", _hash("sha1")),
    fn("hash.sha256", ["string"], "string", _hash("sha256")),
    fn("hash.md5", ["string"], "string", _hash("md5")),
    fn("globalContext.get", ["string"], "dyn", global_context),
    fn("globalContext.get", ["string", "string"], "dyn", global_context),
    fn("http.get", ["string"], "dyn", http_call("GET")),
    fn("http.get", ["string", "map"], "dyn", http_call("GET")),
    fn("http.post", ["string", "dyn"], "dyn", http_call("POST")),
    fn("http.post", ["string", "dyn", "map"], "dyn", http_call("POST")),
    fn("random", [], "string", _random_string),
    fn("random", ["string"], "string", _random_string),
    *IMAGE.overloads,
))
