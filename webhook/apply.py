"""`quartermaster apply`: admission offline, as `kyverno apply` does it; only the command's I/O lives here.

Each resource goes through webhook.engine.offline.admit_offline as a CREATE: mutate, then validate
the mutated object. Admitted objects are recorded in the state, so later resources in the same run
see them (a second GPU pod meets the first one's quota usage).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, TextIO

import yaml

from webhook.app import Quartermaster
from webhook.engine.offline import admit_offline
from webhook.model.cluster import ObjectKey
from webhook.model.results import Outcome, RuleResult


class BadInput(Exception):
    pass


@dataclass
class ApplyReport:
    admitted: list[Mapping[str, Any]] = field(default_factory=list)
    created: dict[ObjectKey, Mapping[str, Any]] = field(default_factory=dict)
    rows: list[tuple[str, RuleResult]] = field(default_factory=list)
    denials: list[tuple[str, str]] = field(default_factory=list)


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


async def run_apply(qm: Quartermaster, resources: list[dict[str, Any]]) -> ApplyReport:
    report = ApplyReport()
    for resource in resources:
        result = await admit_offline(qm.engine, resource)
        request = result.request
        label = f"{request.kind.kind} {request.namespace + '/' if request.namespace else ''}{request.object_name}"
        report.rows.extend((label, r) for r in result.results)
        if not result.allowed:
            report.denials.append((label, result.message))
            continue
        report.admitted.append(dict(result.object or resource))
        for obj in result.created + result.generated:
            report.created.setdefault(ObjectKey.of(obj), obj)
    return report


def write_table(report: ApplyReport, out: TextIO) -> None:
    rows = [("RESOURCE", "POLICY", "RULE", "RESULT", "MESSAGE")]
    rows += [(label, r.policy.qualified_name, r.rule, r.outcome.value + ("" if r.outcome is Outcome.PASS or r.blocks else " (audit)"),
              r.message.replace("\n", " ")) for label, r in report.rows]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        out.write("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4] + "\n")
    for label, message in report.denials:
        out.write(f"DENIED {label}: {message}\n")
    out.write(f"{len(report.admitted)} admitted, {len(report.denials)} denied, {len(report.created)} objects to create\n")


def write_documents(report: ApplyReport, out: TextIO) -> None:
    docs = list(report.admitted) + list(report.created.values())
    out.write(yaml.safe_dump_all([_plain(d) for d in docs], sort_keys=False, default_flow_style=False))


def _plain(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj
