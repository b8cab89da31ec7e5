"""Kyverno CLI values (`cli.kyverno.io/v1alpha1` Value): what a `kyverno test` suite (`variables:` file or
inline `values:`) and `kyverno apply -f/--values-file` and `--set` say about the world a resource lives in.
One reader for `quartermaster test` and `quartermaster apply`.

Field names are matched case-insensitively, as Go's JSON decoding (which the Kyverno CLI uses) does. A
field of the wrong shape is an error naming the file and the field, as Kyverno's typed decoding refuses it.

Precedence of the values a policy sees for one resource: `globalValues`, the rule's `values`, the
resource's `values`, then `--set` over all of them (as `kyverno apply` puts its variables last).
"""

from __future__ import annotations

from dataclasses import field, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from webhook.model import boundedyaml
from webhook.model.quickinit import frozen_dataclass
from webhook.model.review import AdmissionRequest, GroupVersionKind

VALUE_KINDS = ("Value", "Values")  # suites in the wild write both


class ValuesError(Exception):
    """A values file or --set that cannot be honoured; the message names the file (or option) and the field."""


def fold(mapping: Any) -> dict[str, Any]:
    """Keys lower-cased (Go's JSON field matching); a non-mapping becomes {}."""
    return {str(k).lower(): v for k, v in mapping.items()} if isinstance(mapping, Mapping) else {}


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValuesError(f"{where}: must be a mapping, got {type(value).__name__}")
    return dict(value)


def _entries(value: Any, where: str) -> list[dict[str, Any]]:
    """A list of mappings, each folded; None is an empty list."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValuesError(f"{where}: must be a list, got {type(value).__name__}")
    for index, entry in enumerate(value):
        if not isinstance(entry, Mapping):
            raise ValuesError(f"{where}[{index}]: must be a mapping, got {type(entry).__name__}")
    return [fold(entry) for entry in value]


def _named(entries: list[dict[str, Any]], where: str) -> None:
    for index, entry in enumerate(entries):
        if not isinstance(entry.get("name"), str) or not entry["name"]:
            raise ValuesError(f"{where}[{index}].name: a name is required")


def _policies(raw: Any, where: str) -> tuple[Mapping[str, Any], ...]:
    """`policies[]`, checked: each {name, rules[]: {name, values, foreachValues}, resources[]: {name, values}}."""
    policies = _entries(raw, f"{where}policies")
    _named(policies, f"{where}policies")
    for i, policy in enumerate(policies):
        for part in ("rules", "resources"):
            entries = _entries(policy.get(part), f"{where}policies[{i}].{part}")
            _named(entries, f"{where}policies[{i}].{part}")
            for j, entry in enumerate(entries):
                _mapping(entry.get("values"), f"{where}policies[{i}].{part}[{j}].values")
                foreach = _mapping(entry.get("foreachvalues"), f"{where}policies[{i}].{part}[{j}].foreachValues")
                for key, listed in foreach.items():
                    if listed is not None and not isinstance(listed, list):
                        raise ValuesError(f"{where}policies[{i}].{part}[{j}].foreachValues.{key}: must be a list")
    return tuple(policies)


@frozen_dataclass
class Subresource:
    """A values `subresources` entry: objects of `api_version`/`kind` are sent as `parent`'s subresource
    (a Binding as pods/binding, a Scale as deployments/scale), with the parent's kind, as the Kyverno CLI does."""

    api_version: str
    kind: str
    parent: tuple[str, str, str]  # group, version, kind
    resource: str                 # the parent's plural
    name: str                     # the subresource's own name ("binding" of "pods/binding")

    @classmethod
    def parse(cls, raw: Any, where: str = "subresources") -> "Subresource":
        entry = fold(raw)
        sub, parent = fold(entry.get("subresource")), fold(entry.get("parentresource"))
        resource, _, name = str(sub.get("name", "")).partition("/")
        if not name or not sub.get("kind") or not parent.get("kind"):
            raise ValuesError(f"{where}: needs subresource.name (as resource/subresource, e.g. pods/binding), "
                              "subresource.kind and parentResource.kind")
        group = str(sub.get("group", "") or "")
        api_version = f"{group}/{sub.get('version', '')}" if group else str(sub.get("version", ""))
        return cls(api_version, str(sub["kind"]), (str(parent.get("group", "") or ""), str(parent.get("version", "")),
                                                   str(parent["kind"])), str(parent.get("name") or resource), name)


@frozen_dataclass
class Values:
    """What a suite or an apply run says about the world its resources live in (Kyverno's `Value`)."""

    global_values: Mapping[str, Any] = field(default_factory=dict)
    policies: tuple[Mapping[str, Any], ...] = ()
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    namespaces: tuple[Mapping[str, Any], ...] = ()
    subresources: tuple[Subresource, ...] = ()
    variables: Mapping[str, Any] = field(default_factory=dict)  # `apply --set`: over every other value

    @classmethod
    def parse(cls, raw: Any, where: str = "values") -> "Values":
        """`where` names the file (or the suite's field) in errors: `values.yaml: policies[0].name: ...`."""
        if not isinstance(raw, Mapping):
            raise ValuesError(f"{where}: a values file must be a mapping (kind: Value), got {type(raw).__name__}")
        data = fold(raw)
        if data.get("kind") is not None and data["kind"] not in VALUE_KINDS:
            raise ValuesError(f"{where}: kind: {data['kind']!r} is not a Kyverno values file "
                              f"(apiVersion: cli.kyverno.io/v1alpha1, kind: Value)")
        prefix = f"{where}: "
        labels: dict[str, Mapping[str, str]] = {}
        selectors = _entries(data.get("namespaceselector"), f"{prefix}namespaceSelector")
        _named(selectors, f"{prefix}namespaceSelector")
        for index, entry in enumerate(selectors):
            labels[entry["name"]] = _mapping(entry.get("labels"), f"{prefix}namespaceSelector[{index}].labels")
        namespaces = []
        for index, ns in enumerate(data.get("namespaces") or []):
            meta = ns.get("metadata") if isinstance(ns, Mapping) else None
            if not isinstance(meta, Mapping) or not meta.get("name"):
                raise ValuesError(f"{prefix}namespaces[{index}].metadata.name: a Namespace object with a name is required")
            ns = {**ns, "apiVersion": "v1", "kind": "Namespace"}  # suites write `kind: namespace`
            namespaces.append(ns)
            labels[str(meta["name"])] = _mapping(meta.get("labels"), f"{prefix}namespaces[{index}].metadata.labels")
        subresources = tuple(Subresource.parse(e, f"{prefix}subresources[{i}]")
                             for i, e in enumerate(_entries(data.get("subresources"), f"{prefix}subresources")))
        return cls(_mapping(data.get("globalvalues"), f"{prefix}globalValues"), _policies(data.get("policies"), prefix),
                   labels, tuple(namespaces), subresources)

    def with_variables(self, variables: Mapping[str, Any]) -> "Values":
        return replace(self, variables={**self.variables, **variables}) if variables else self

    def namespace(self, name: str) -> Mapping[str, Any] | None:
        """The Namespace object a policy sees as namespaceObject, as the Kyverno CLI builds it."""
        for ns in self.namespaces:
            if (ns.get("metadata") or {}).get("name") == name:
                return ns
        if name in self.namespace_labels:
            return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(self.namespace_labels[name])}}
        return None

    def namespace_objects(self) -> list[dict[str, Any]]:
        """The Namespace objects, and one per `namespaceSelector` entry (its labels) without an object."""
        found = [dict(ns) for ns in self.namespaces]
        named = {(ns.get("metadata") or {}).get("name") for ns in found}
        return found + [dict(self.namespace(name) or {}) for name in self.namespace_labels if name not in named]

    @property
    def operation(self) -> str:
        given = self.variables.get("request.operation") or self.global_values.get("request.operation")
        return str(given or "").upper()

    def values_for(self, policy: str, resource: str, rule: str = "") -> Mapping[str, Any]:
        """Values for one policy and resource: globalValues, the rule's values (when a rule is named), the
        policy's resource values, then --set."""
        values = dict(self.global_values)
        for entry in self.policies:
            if entry.get("name") != policy:
                continue
            for rule_entry in (entry.get("rules") or []) if rule else []:
                rule_entry = fold(rule_entry)
                if rule_entry.get("name") == rule:
                    values.update(rule_entry.get("values") or {})
            for res in entry.get("resources") or []:
                res = fold(res)
                if res.get("name") == resource:
                    values.update(res.get("values") or {})
        values.update(self.variables)
        return values

    def foreach_values_for(self, policy: str, rule: str) -> Mapping[str, list[Any]]:
        """A rule's `foreachValues`: per context entry, one value per foreach element."""
        found: dict[str, list[Any]] = {}
        for entry in self.policies:
            if entry.get("name") == policy:
                for rule_entry in entry.get("rules") or []:
                    rule_entry = fold(rule_entry)
                    if rule_entry.get("name") == rule:
                        found.update({str(k): list(v or []) for k, v in (rule_entry.get("foreachvalues") or {}).items()})
        return found

    def as_subresource(self, request: AdmissionRequest) -> AdmissionRequest:
        """A resource the values declare a subresource goes in as the parent's (kind and resource), with the
        subresource named, as the Kyverno CLI sends it."""
        for sub in self.subresources:
            if sub.api_version == request.kind.api_version and sub.kind == request.kind.kind:
                return replace(request, kind=GroupVersionKind(*sub.parent), resource=sub.resource, sub_resource=sub.name)
        return request


def read_values_file(path: Path, where: str = "") -> Values:
    """A values file (`kind: Value`); `where` prefixes its name in errors (a suite's `variables:` field)."""
    name = f"{where}: {path}" if where else str(path)
    try:
        raw = boundedyaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValuesError(f"{name}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ValuesError(f"{name}: cannot read: {exc}") from None
    except yaml.YAMLError as exc:
        line, problem = boundedyaml.yaml_problem(exc)
        raise ValuesError(f"{name}{f':{line}' if line else ''}: invalid YAML: {problem}") from None
    return Values.parse(raw, name)


def parse_set(texts: Sequence[str]) -> dict[str, str]:
    """`--set key=value[,key=value]`, repeatable, as `kyverno apply --set` takes it: values are strings."""
    variables: dict[str, str] = {}
    for text in texts:
        for pair in text.split(","):
            key, equals, value = pair.partition("=")
            if not equals or not key.strip():
                raise ValuesError(f"--set {pair!r}: expected key=value (e.g. request.operation=UPDATE)")
            variables[key.strip()] = value.strip()
    return variables


class ValuesLookups:
    """The state's lookups with the values of a run (`apply -f/--set`), for families that read them."""

    request_info: Mapping[str, Any] = {}  # a run's values name no roles

    def __init__(self, base: Any, values: Values) -> None:
        self.base = base
        self.values = values
        self.supplied = self

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.base.get(api_version, kind, namespace, name)  # type: ignore[no-any-return]

    def list(self, api_version: str, kind: str, namespace: str = "", selector: Mapping[str, Any] | None = None) -> list:
        return self.base.list(api_version, kind, namespace, selector)  # type: ignore[no-any-return]

    def global_context(self, name: str) -> Any:
        return self.base.global_context(name)

    def http(self, method: str, url: str, body: Any = None) -> Any:
        return self.base.http(method, url, body)

    def image_data(self, ref: str) -> Mapping[str, Any]:
        return self.base.image_data(ref)  # type: ignore[no-any-return]

    def values_for(self, policy: str, resource: str, rule: str = "") -> Mapping[str, Any]:
        return self.values.values_for(policy, resource, rule)

    def foreach_values_for(self, policy: str, rule: str) -> Mapping[str, list[Any]]:
        return self.values.foreach_values_for(policy, rule)
