"""Kyverno CLI test suites (`cli.kyverno.io/v1alpha1` Test, and the older un-versioned format) as data.

Field names are matched case-insensitively, as Go's JSON decoding (which the Kyverno CLI uses) does:
suites in the wild spell `isMUtatingPolicy`. Unknown fields are kept out, never guessed.
"""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import Any, Mapping

from webhook.model.quickinit import frozen_dataclass

RESULTS = ("pass", "fail", "skip", "warn", "error")
# the Test fields this runner understands; anything else in a suite fails its results with a reason
SUPPORTED = {"apiversion", "kind", "metadata", "name", "policies", "resources", "variables", "values", "userinfo",
             "results", "exceptions", "context", "paramresources", "targetresources", "clusterresources",
             "apicallresponses", "globalcontextentries"}
FLAGS = ("isValidatingPolicy", "isMutatingPolicy", "isGeneratingPolicy", "isValidatingAdmissionPolicy",
         "isMutatingAdmissionPolicy", "isDeletingPolicy", "isImageValidatingPolicy")


class SuiteError(Exception):
    """The suite cannot be run as written; the message names the file and the field."""


def fold(mapping: Any) -> dict[str, Any]:
    """Keys lower-cased (Go's JSON field matching); a non-mapping becomes {}."""
    return {str(k).lower(): v for k, v in mapping.items()} if isinstance(mapping, Mapping) else {}


@frozen_dataclass
class ExpectedResult:
    index: int
    policy: str  # "name" or "namespace/name"
    rule: str
    resources: tuple[str, ...]  # "name" or "namespace/name"
    kind: str
    result: str
    operation: str = ""
    patched_resource: str = ""
    generated_resources: tuple[str, ...] = ()
    clone_source_resource: str = ""
    flags: frozenset[str] = frozenset()  # which is*Policy flags are set
    fail_on_missing: bool = False

    @property
    def policy_name(self) -> str:
        return self.policy.rsplit("/", 1)[-1]

    @classmethod
    def parse(cls, index: int, raw: Any, where: str) -> "ExpectedResult":
        data = fold(raw)
        if not data:
            raise SuiteError(f"{where}: results[{index}] must be a mapping")
        result = str(data.get("result", data.get("status", ""))).lower()
        if result not in RESULTS:
            raise SuiteError(f"{where}: results[{index}].result must be one of {', '.join(RESULTS)}, got {result!r}")
        resources = data.get("resources")
        if resources is None and data.get("resource"):  # the older format: one resource and its namespace
            name = str(data["resource"])
            resources = [f"{data['namespace']}/{name}" if data.get("namespace") else name]
        generated = [str(g) for g in data.get("generatedresources") or []]
        if data.get("generatedresource"):
            generated.insert(0, str(data["generatedresource"]))
        return cls(
            index=index, policy=str(data.get("policy", "")), rule=str(data.get("rule", "") or ""),
            resources=tuple(str(r) for r in resources or []), kind=str(data.get("kind", "") or ""), result=result,
            operation=str(data.get("operation", "") or "").upper(),
            patched_resource=str(data.get("patchedresources") or data.get("patchedresource") or ""),
            generated_resources=tuple(generated),
            clone_source_resource=str(data.get("clonesourceresource") or ""),
            flags=frozenset(f for f in FLAGS if data.get(f.lower()) is True),
            fail_on_missing=data.get("failonmissingresources") is True,
        )


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
    def parse(cls, raw: Any) -> "Subresource | None":
        entry = fold(raw)
        sub, parent = fold(entry.get("subresource")), fold(entry.get("parentresource"))
        resource, _, name = str(sub.get("name", "")).partition("/")
        if not name or not sub.get("kind") or not parent.get("kind"):
            return None
        group = str(sub.get("group", "") or "")
        api_version = f"{group}/{sub.get('version', '')}" if group else str(sub.get("version", ""))
        return cls(api_version, str(sub["kind"]), (str(parent.get("group", "") or ""), str(parent.get("version", "")),
                                                   str(parent["kind"])), str(parent.get("name") or resource), name)


@frozen_dataclass
class Values:
    """What a suite says about the world its resources live in (Kyverno's `Value`)."""

    global_values: Mapping[str, Any] = field(default_factory=dict)
    policies: tuple[Mapping[str, Any], ...] = ()
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    namespaces: tuple[Mapping[str, Any], ...] = ()
    subresources: tuple[Subresource, ...] = ()

    @classmethod
    def parse(cls, raw: Any) -> "Values":
        data = fold(raw)
        labels: dict[str, Mapping[str, str]] = {}
        for entry in data.get("namespaceselector") or []:
            entry = fold(entry)
            labels[str(entry.get("name", ""))] = dict(entry.get("labels") or {})
        namespaces = []
        for ns in data.get("namespaces") or []:
            if isinstance(ns, Mapping):
                ns = {**ns, "apiVersion": "v1", "kind": "Namespace"}  # suites write `kind: namespace`
                namespaces.append(ns)
                name = str((ns.get("metadata") or {}).get("name", ""))
                labels[name] = dict((ns.get("metadata") or {}).get("labels") or {})
        subresources = tuple(s for s in (Subresource.parse(e) for e in data.get("subresources") or []) if s)
        return cls(dict(data.get("globalvalues") or {}), tuple(data.get("policies") or ()), labels, tuple(namespaces),
                   subresources)

    def namespace(self, name: str) -> Mapping[str, Any] | None:
        """The Namespace object a policy sees as namespaceObject, as the Kyverno CLI builds it."""
        for ns in self.namespaces:
            if (ns.get("metadata") or {}).get("name") == name:
                return ns
        if name in self.namespace_labels:
            return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(self.namespace_labels[name])}}
        return None

    @property
    def operation(self) -> str:
        return str(self.global_values.get("request.operation", "") or "").upper()


@frozen_dataclass
class Suite:
    path: Path
    name: str
    policies: tuple[str, ...]
    resources: tuple[str, ...]
    results: tuple[ExpectedResult, ...]
    values: Values = Values()
    userinfo: str = ""
    exceptions: tuple[str, ...] = ()
    context: str = ""
    param_resources: tuple[str, ...] = ()
    cluster_resources: tuple[str, ...] = ()
    api_calls: tuple[Any, ...] = ()  # apiCallResponses, as written
    global_entries: tuple[Any, ...] = ()  # globalContextEntries, as written
    unsupported: tuple[str, ...] = ()  # fields this runner cannot honour: their results fail, naming them
    error: str = ""  # the suite could not be read: every result fails with this

    @property
    def directory(self) -> Path:
        return self.path.parent

    def resolve(self, name: str) -> Path:
        return (self.directory / name).resolve() if not Path(name).is_absolute() else Path(name)
