"""`quartermaster apply`: admission offline, as `kyverno apply` does it; only the command's I/O lives here.

Each resource goes through webhook.engine.offline.admit_offline as a CREATE: mutate, then validate
the mutated object. Admitted objects are recorded in the state, so later resources in the same run
see them (a second GPU pod meets the first one's quota usage).
"""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, TextIO

import yaml

from webhook.app import Quartermaster
from webhook.engine.offline import OFFLINE_USER, admit_offline
from webhook.model.review import UserInfo
from webhook.model.cluster import ObjectKey
from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import RuleResult
from webhook.model.review import object_problem
from webhook.model.boundedyaml import yaml_problem
from webhook.policy.documents import safe_load_all


class BadInput(Exception):
    pass


@frozen_dataclass
class Skip:
    """A resource no namespace-selecting policy could match: its namespace is not in the state."""

    label: str
    namespace: str

    @property
    def reason(self) -> str:
        return (f"namespace {self.namespace!r} is not in the cluster state: policies that select namespaces "
                "(every platform policy) cannot match; give its Namespace with --state")


@dataclass
class ApplyReport:
    admitted: list[Mapping[str, Any]] = field(default_factory=list)
    created: dict[ObjectKey, Mapping[str, Any]] = field(default_factory=dict)
    rows: list[tuple[str, RuleResult]] = field(default_factory=list)
    denials: list[tuple[str, str]] = field(default_factory=list)
    resources: dict[str, tuple[Mapping[str, Any], str]] = field(default_factory=dict)  # label -> (resource, namespace)
    skips: list[Skip] = field(default_factory=list)


def read_resources(paths: list[str], stdin: TextIO = sys.stdin) -> list[dict[str, Any]]:
    resources: list[dict[str, Any]] = []
    for name in paths:
        try:
            text = stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
            docs = safe_load_all(text)  # libyaml when it reads the text exactly as PyYAML's own reader would
        except OSError as exc:
            raise BadInput(f"{name}: cannot read: {exc.strerror or exc}") from None
        except yaml.YAMLError as exc:
            line, problem = yaml_problem(exc)
            where = f"{name}:{line}" if line else name
            raise BadInput(f"{where}: invalid YAML: {problem}") from None
        for index, doc in enumerate(docs):
            if doc is None:
                continue
            items = doc.get("items") if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") else [doc]
            for item in items or []:
                if not isinstance(item, dict) or not isinstance(item.get("kind"), str) or not isinstance(item.get("apiVersion"), str):
                    raise BadInput(f"{name} document {index}: a resource needs apiVersion and kind")
                meta = item.get("metadata")
                if not isinstance(meta, dict) or not (meta.get("name") or meta.get("generateName")):
                    raise BadInput(f"{name} document {index}: a resource needs metadata.name")
                problem = object_problem(item, item["kind"])
                if problem:
                    raise BadInput(f"{name} document {index}: {problem}")
                resources.append(item)
    return resources


OPERATIONS = ("CREATE", "UPDATE", "DELETE")


async def run_apply(qm: Quartermaster, resources: list[dict[str, Any]], user: UserInfo = OFFLINE_USER) -> ApplyReport:
    """Each resource as a CREATE, or as the operation the values say (`--set request.operation=UPDATE`: the
    resource replaces itself, as `kyverno apply` compares it with itself; DELETE: it is deleted)."""
    report = ApplyReport()
    values = qm.settings.values
    operation = (values.operation if values is not None else "") or "CREATE"
    if operation not in OPERATIONS:
        raise BadInput(f"request.operation: {operation!r} is not one of {', '.join(OPERATIONS)}")
    for resource in resources:
        old = copy.deepcopy(resource) if operation != "CREATE" else None
        result = await admit_offline(qm.engine, None if operation == "DELETE" else resource, operation=operation,
                                     old=old, user=user, as_sent=values.as_subresource if values is not None else None)
        request = result.request
        label = f"{request.kind.kind} {request.namespace + '/' if request.namespace else ''}{request.object_name}"
        report.resources[label] = (resource, request.namespace)
        if request.namespace and qm.state.get("Namespace", "", request.namespace) is None:
            report.skips.append(Skip(label, request.namespace))
        report.rows.extend((label, r) for r in result.results)
        if not result.allowed:
            report.denials.append((label, result.message))
            continue
        if operation != "DELETE":
            report.admitted.append(dict(result.object or resource))
        for obj in result.created + result.generated:
            report.created.setdefault(ObjectKey.of(obj), obj)
    return report
