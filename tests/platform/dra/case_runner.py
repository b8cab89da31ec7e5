"""Run one declarative DRA case (tests/cases/dra/<case>/) through the real engine.

A case directory holds:
  resource.yaml   the pod as the user wrote it
  expected.yaml   allowed, the pod after the patch (`object`, absent: no patch), the templates
                  created, the rule results, warnings, or the denial message
  policy.yaml     optional: the policy (default: the repository's policies/device-claim-rewrite.yaml)
  request.yaml    optional: operation, dryRun, oldObject: resource
  state.yaml      optional: objects in the cluster state besides examples/state

`python -m tests.platform.dra.case_runner CASE...` rewrites expected.yaml from the current code:
only for a deliberate change, and read the diff before committing it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.support import REPO, apply_patch, case_state, load_yaml, review
from webhook.app import Quartermaster, Settings
from webhook.engine.offline import OfflineResult, admit_offline
from webhook.model.review import UserInfo

USER = UserInfo("jdoe@example.org", ("system:authenticated",))  # as tests.support.review sends it

CASES = REPO / "tests" / "cases" / "dra"
DEFAULT_POLICY = REPO / "policies" / "device-claim-rewrite.yaml"


@dataclass
class CaseRun:
    resource: dict[str, Any]
    options: dict[str, Any]
    qm: Quartermaster
    result: OfflineResult  # mutate, then validate: the one offline admission path
    patched: dict[str, Any]


def read_one(path: Path, default: Any = None) -> Any:
    if not path.exists():
        return default
    docs = load_yaml(path)
    return docs[0] if docs else default


def build(case: Path) -> Quartermaster:
    policy = case / "policy.yaml" if (case / "policy.yaml").exists() else DEFAULT_POLICY
    qm = Quartermaster.build(Settings(policies=policy), state=case_state(case))
    qm.load_policies()
    return qm


def review_body(resource: dict[str, Any], options: dict[str, Any]) -> bytes:
    old = resource if options.get("oldObject") == "resource" else None
    body = review(resource, operation=options.get("operation", "CREATE"), old=old,
                  dry_run=bool(options.get("dryRun", False)))
    return json.dumps(body).encode()


async def run_case(case: Path) -> CaseRun:
    resource = read_one(case / "resource.yaml")
    options = read_one(case / "request.yaml", {})
    qm = build(case)
    old = resource if options.get("oldObject") == "resource" else None
    result = await admit_offline(qm.engine, resource, operation=options.get("operation", "CREATE"), old=old,
                                 user=USER, dry_run=bool(options.get("dryRun", False)))
    patched = apply_patch(resource, list(result.patch))
    return CaseRun(resource, options, qm, result, patched)


def results_of(run: CaseRun) -> list[dict[str, str]]:
    return [{"rule": r.rule, "outcome": r.outcome.value, "message": r.message} for r in run.result.results]


def observed(run: CaseRun) -> dict[str, Any]:
    """What the expected.yaml of this run says; the test compares field by field."""
    verdict = run.result
    out: dict[str, Any] = {"allowed": verdict.allowed}
    if not verdict.allowed:
        out["message"] = verdict.message
    elif verdict.patch:
        out["object"] = run.patched
    if run.result.created:
        out["templates"] = [dict(t) for t in run.result.created]
    out["results"] = results_of(run)
    if verdict.warnings:
        out["warnings"] = list(verdict.warnings)
    return out


def regenerate(names: list[str]) -> None:
    for name in names:
        case = CASES / name
        run = asyncio.run(run_case(case))
        text = yaml.safe_dump(json.loads(json.dumps(observed(run))), sort_keys=False, width=120)
        (case / "expected.yaml").write_text(text)
        print(f"wrote {case / 'expected.yaml'}")


if __name__ == "__main__":
    regenerate(sys.argv[1:] or sorted(p.name for p in CASES.iterdir() if p.is_dir()))
