"""`quartermaster apply`: admission offline, as `kyverno apply` does it.

Each resource is sent through the same engine as a CREATE review: mutate, then validate the
mutated object. Admitted objects are recorded in the state, so later resources in the same run
see them (a second GPU pod meets the first one's quota usage).
"""

from __future__ import annotations

import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, TextIO

import yaml

from webhook.app import Quartermaster
from webhook.model.results import RuleResult
from webhook.model.review import AdmissionRequest, GroupVersionKind, UserInfo
from webhook.model.cluster import ObjectKey


class BadInput(Exception):
    pass


@dataclass(frozen=True)
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
            docs = list(yaml.safe_load_all(text))
        except OSError as exc:
            raise BadInput(f"{name}: cannot read: {exc.strerror or exc}") from None
        except yaml.YAMLError as exc:
            raise BadInput(f"{name}: invalid YAML: {exc}") from None
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
                resources.append(item)
    return resources


def review_for(resource: Mapping[str, Any]) -> AdmissionRequest:
    api_version = resource["apiVersion"]
    group, _, version = api_version.rpartition("/")
    meta = resource.get("metadata") or {}
    kind = resource["kind"]
    namespace = "" if kind in ("Namespace", "Profile") else meta.get("namespace") or "default"
    plural = kind.lower() + ("es" if kind.endswith("s") else "s")
    return AdmissionRequest(
        uid=str(uuid.uuid4()), kind=GroupVersionKind(group, version, kind), resource=plural, sub_resource="",
        namespace=namespace, name=meta.get("name", ""), operation="CREATE", object=resource, old_object=None,
        dry_run=False, user=UserInfo("quartermaster-apply", ("system:authenticated",)),
    )


def describe(resource: Mapping[str, Any]) -> str:
    return str(ObjectKey.of(resource)) if (resource.get("metadata") or {}).get("namespace") else \
        f"{resource.get('kind')} {(resource.get('metadata') or {}).get('name', '')}"


async def run_apply(qm: Quartermaster, resources: list[dict[str, Any]]) -> ApplyReport:
    report = ApplyReport()
    for resource in resources:
        request = review_for(resource)
        label = f"{request.kind.kind} {request.namespace + '/' if request.namespace else ''}{request.object_name}"
        report.resources[label] = (resource, request.namespace)
        if request.namespace and qm.state.get("Namespace", "", request.namespace) is None:
            report.skips.append(Skip(label, request.namespace))
        mutated = await qm.engine.mutate(request)
        report.rows.extend((label, r) for r in mutated.verdict.results)
        if not mutated.verdict.allowed:
            report.denials.append((label, mutated.verdict.message))
            continue
        final = dict(mutated.object or resource)
        validate_request = AdmissionRequest(**{**request.__dict__, "object": final})
        verdict = await qm.engine.validate(validate_request)
        report.rows.extend((label, r) for r in verdict.results)
        if not verdict.allowed:
            report.denials.append((label, verdict.message))
            continue
        report.admitted.append(final)
        for obj in mutated.created:
            report.created.setdefault(ObjectKey.of(obj), obj)
    return report
