"""What a suite tells lookups beyond its resources: `clusterResources`, `apiCallResponses` (HTTP answers),
`globalContextEntries` — read as the Kyverno CLI reads them.

- clusterResources: files of kind ClusterResource; their `spec.resources` join the cluster state (CRDs are
  not needed here: objects are stored whatever their kind).
- apiCallResponses: `{url | urlPath, method?, response: {statusCode?, body}}`; a policy's HTTP call gets
  `{"body": ..., "statusCode": ...}` for the entry whose method and URL (or URL path) match.
- globalContextEntries: `{name, data | resources | resourceFiles, fieldPath?, projections?}`; paths are
  dotted field paths (`a.b.c`); a JMESPath expression beyond that is reported, not guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping
from urllib.parse import urlparse

from webhook.testsuite.load import _defaulted, _load_yaml_mapping, read_objects
from webhook.policy.cli_values import fold
from webhook.testsuite.model import Suite, SuiteError

_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*$")


def _cluster_scoped_kinds(suite: Suite, base: Any, crds: Any) -> set[tuple[str, str]]:
    """(group, kind) of the CRDs a ClusterResource lists with `scope: Cluster`."""
    kinds = set()
    for name in crds or []:
        path = (base / str(name)).resolve()
        for crd in read_objects(suite, (str(path),), "clusterResources crds"):
            spec = crd.get("spec") or {}
            if spec.get("scope") == "Cluster":
                kinds.add((str(spec.get("group", "")), str((spec.get("names") or {}).get("kind", ""))))
    return kinds


def cluster_resources(suite: Suite, raw: Any) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for name in raw or []:
        path = suite.resolve(str(name))
        spec = fold(fold(_load_yaml_mapping(path, f"{suite.path}: clusterResources")).get("spec"))
        cluster = _cluster_scoped_kinds(suite, suite.directory, spec.get("crds"))
        for resource in spec.get("resources") or []:
            if not isinstance(resource, Mapping):
                continue
            obj = _defaulted(resource)
            group = str(obj.get("apiVersion", "")).rpartition("/")[0]
            if (group, obj.get("kind")) in cluster:  # a CRD kind the defaults took for namespaced
                obj.get("metadata", {}).pop("namespace", None)
            objects.append(obj)
    return objects


def _path(value: Any, path: str, what: str) -> Any:
    if not _DOTTED.match(path):
        raise SuiteError(f"{what}: only dotted field paths are supported here, not the JMESPath {path!r}")
    for step in path.split("."):
        value = value.get(step) if isinstance(value, Mapping) else None
    return value


@dataclass
class SuiteContext:
    http: dict[tuple[str, str], Any] = field(default_factory=dict)  # (METHOD or "", url or path) -> answer
    globals: dict[str, Any] = field(default_factory=dict)

    def answer(self, method: str, url: str) -> Any:
        path = urlparse(url).path
        for key in ((method.upper(), url), ("", url), (method.upper(), path), ("", path)):
            if key in self.http:
                return self.http[key]
        raise KeyError(url)


def suite_context(suite: Suite, api_calls: Any, entries: Any) -> SuiteContext:
    context = SuiteContext()
    for i, raw in enumerate(api_calls or []):
        entry = fold(raw)
        url = str(entry.get("url") or entry.get("urlpath") or "")
        if not url:
            raise SuiteError(f"{suite.path}: apiCallResponses[{i}] needs url or urlPath")
        response = fold(entry.get("response"))
        answer = {"body": response.get("body"), "statusCode": response.get("statuscode") or 200}
        context.http[(str(entry.get("method") or "").upper(), url)] = answer
    for i, raw in enumerate(entries or []):
        entry = fold(raw)
        name = str(entry.get("name") or "")
        what = f"{suite.path}: globalContextEntries[{i}] {name!r}"
        if entry.get("resourcefiles"):
            value: Any = read_objects(suite, tuple(str(f) for f in entry["resourcefiles"]), "resourceFiles")
        elif entry.get("resources") is not None:
            value = list(entry["resources"])
        else:
            value = entry.get("data")
        if entry.get("fieldpath"):
            value = _path(value, str(entry["fieldpath"]), what)
        if entry.get("projections"):
            value = {str(fold(p).get("name")): _path(value, str(fold(p).get("path")), what) for p in entry["projections"]}
        context.globals[name] = value
    return context
