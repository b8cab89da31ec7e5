"""`matchConstraints` (admissionregistration MatchResources) as the API server and Kyverno evaluate them.

Order and semantics follow Kubernetes' admission-policy matcher: namespaceSelector (cluster-scoped
objects other than Namespaces always pass; an unknown namespace has only its
`kubernetes.io/metadata.name` label), objectSelector (object or oldObject), excludeResourceRules,
then resourceRules (apiGroups, apiVersions, resources with subresources, operations, scope,
resourceNames). matchPolicy Equivalent (the default) also matches the same group and resource in
another version.
"""

from __future__ import annotations

from typing import Any, Mapping

from webhook.model.quickinit import frozen_dataclass
from webhook.model.review import AdmissionRequest
from webhook.model.selectors import MATCH_ALL, LabelSelector, parse_selector

OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT", "*"})
SCOPES = frozenset({"*", "Cluster", "Namespaced"})


class MatchSpecError(ValueError):
    """A matchConstraints field is malformed; `field` is relative to matchConstraints."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _strings(raw: Any, field: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise MatchSpecError(field, "must be a list of strings")
    return tuple(raw)


@frozen_dataclass
class ResourceRule:
    groups: tuple[str, ...]
    versions: tuple[str, ...]
    resources: tuple[str, ...]
    operations: tuple[str, ...]
    scope: str = "*"
    names: tuple[str, ...] = ()

    @classmethod
    def parse(cls, raw: Any, field: str) -> "ResourceRule":
        if not isinstance(raw, Mapping):
            raise MatchSpecError(field, "must be a mapping")
        operations = _strings(raw.get("operations"), f"{field}.operations")
        bad = [op for op in operations if op not in OPERATIONS]
        if bad:
            raise MatchSpecError(f"{field}.operations", f"unknown operation {bad[0]!r}; expected one of {sorted(OPERATIONS)}")
        scope = raw.get("scope") or "*"
        if scope not in SCOPES:
            raise MatchSpecError(f"{field}.scope", f"must be one of {sorted(SCOPES)}")
        return cls(_strings(raw.get("apiGroups"), f"{field}.apiGroups"), _strings(raw.get("apiVersions"), f"{field}.apiVersions"),
                   _strings(raw.get("resources"), f"{field}.resources"), operations, scope,
                   _strings(raw.get("resourceNames"), f"{field}.resourceNames"))

    def _resource(self, resource: str, sub: str) -> bool:
        wanted = f"{resource}/{sub}" if sub else resource
        for pattern in self.resources:
            if pattern in ("*/*", wanted):
                return True
            if pattern == "*" and not sub:
                return True
            head, _, tail = pattern.partition("/")
            if tail and ((head == "*" and tail == sub) or (tail == "*" and head == resource and sub)):
                return True
        return False

    def _scope(self, request: AdmissionRequest, resource: str) -> bool:
        if self.scope == "*":
            return True
        cluster = resource == "namespaces" or not request.namespace
        return cluster if self.scope == "Cluster" else not cluster

    def _name(self, request: AdmissionRequest) -> bool:
        if not self.names:
            return True
        if request.name:
            return request.name in self.names
        generate_name = str(((request.object or {}).get("metadata") or {}).get("generateName", ""))
        return bool(generate_name) and any(generate_name.startswith(n) for n in self.names)

    def matches(self, request: AdmissionRequest, equivalent: bool) -> bool:
        gvr = request.gvr  # rules match the resource as the API server names it (group/version of the request)
        group, version, resource = gvr.group, gvr.version, gvr.resource
        if not any(op in ("*", request.operation) for op in self.operations):
            return False
        if not any(g in ("*", group) for g in self.groups):
            return False
        if not equivalent and not any(v in ("*", version) for v in self.versions):
            return False
        return self._resource(resource, request.sub_resource) and self._scope(request, resource) and self._name(request)


@frozen_dataclass
class MatchResources:
    rules: tuple[ResourceRule, ...] = ()
    exclude: tuple[ResourceRule, ...] = ()
    namespace_selector: LabelSelector = MATCH_ALL
    object_selector: LabelSelector = MATCH_ALL
    equivalent: bool = True  # matchPolicy: Equivalent (default) or Exact
    raw: Mapping[str, Any] | None = None
    never: bool = False  # no matchConstraints at all: Kyverno matches nothing (JSON-mode policies have none)

    @classmethod
    def parse(cls, raw: Any) -> "MatchResources":
        if raw is None:
            return cls(never=True)
        if not isinstance(raw, Mapping):
            raise MatchSpecError("", "must be a mapping")
        rules = tuple(ResourceRule.parse(r, f"resourceRules[{i}]") for i, r in enumerate(raw.get("resourceRules") or []))
        exclude = tuple(ResourceRule.parse(r, f"excludeResourceRules[{i}]")
                        for i, r in enumerate(raw.get("excludeResourceRules") or []))
        selectors = {}
        for key in ("namespaceSelector", "objectSelector"):
            try:
                selectors[key] = parse_selector(raw.get(key))
            except (ValueError, AttributeError, TypeError) as exc:
                raise MatchSpecError(key, str(exc)) from None
        policy = raw.get("matchPolicy") or "Equivalent"
        if policy not in ("Equivalent", "Exact"):
            raise MatchSpecError("matchPolicy", "must be Equivalent or Exact")
        return cls(rules, exclude, selectors["namespaceSelector"], selectors["objectSelector"], policy == "Equivalent", dict(raw))

    @property
    def plain(self) -> bool:
        """One resource rule and nothing else: the Kyverno CLI reports such a policy as not found (rather than
        excluded) on resources it does not match."""
        return not self.never and (len(self.rules) == 1 and not self.exclude and not self.rules[0].names
                and self.namespace_selector.everything and self.object_selector.everything)

    @property
    def static(self) -> bool:
        """Whether matching reads nothing but the request's `static_key`: no selectors, no resource names."""
        return self.never or (self.namespace_selector.everything and self.object_selector.everything
                              and not any(rule.names for rule in (*self.rules, *self.exclude)))

    def _namespace_ok(self, request: AdmissionRequest, namespace: Mapping[str, Any] | None) -> bool:
        if self.namespace_selector.everything:
            return True
        if request.resource == "namespaces" and not request.sub_resource and request.operation in ("CREATE", "UPDATE"):
            labels = ((request.object or {}).get("metadata") or {}).get("labels") or {}
        elif not request.namespace:
            return request.resource != "namespaces"
        elif namespace is not None:
            labels = (namespace.get("metadata") or {}).get("labels") or {}
        else:  # as Kyverno does without a Namespace object: only the name label is known
            labels = {"kubernetes.io/metadata.name": request.namespace}
        return self.namespace_selector.matches(labels)

    def _object_ok(self, request: AdmissionRequest, obj: Mapping[str, Any] | None) -> bool:
        if self.object_selector.everything:
            return True
        candidates = [o for o in (obj if obj is not None else request.object, request.old_object) if o is not None]
        return any(self.object_selector.matches((o.get("metadata") or {}).get("labels") or {}) for o in candidates)

    def matches(self, request: AdmissionRequest, obj: Mapping[str, Any] | None, namespace: Mapping[str, Any] | None) -> bool:
        if self.never:
            return False
        if not self._namespace_ok(request, namespace) or not self._object_ok(request, obj):
            return False
        if any(rule.matches(request, False) for rule in self.exclude):
            return False
        if not self.rules:
            return True
        if any(rule.matches(request, False) for rule in self.rules):
            return True
        return self.equivalent and any(rule.matches(request, True) for rule in self.rules)


def static_key(request: AdmissionRequest) -> tuple[str, str, str, str, str, bool]:
    """All that a `static` MatchResources reads: operation, group, version, resource, subresource, and
    whether the request is namespaced (a rule's scope)."""
    gvr = request.gvr
    return request.operation, gvr.group, gvr.version, gvr.resource, request.sub_resource, bool(request.namespace)
