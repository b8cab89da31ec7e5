"""Declarative NotebookInjection cases (tests/cases/notebook/<case>/), run through the real engine.

A case directory holds:
  resource.yaml   the pod as the API server hands it to the mutating webhook
  expected.yaml   allowed; the pod after the patch (`object`; absent: no patch); rule results; warnings;
                  the denial message
  policy.yaml     optional: the policies to load, in file order (default: the repository's
                  policies/notebook-injection.yaml)
  overrides.yaml  optional: a JSON merge patch (RFC 7386) onto the notebook policy, for a variant
  state.yaml      optional: objects in the cluster state besides examples/state

Every case also checks what the API server would: the patch applies to the original with a real JSON
Patch library, the result is a valid Pod for Kubernetes 1.34 (strict), and calling the webhook again
on the patched pod (reinvocation) changes nothing.

`python -m tests.platform.notebook.test_cases CASE...` rewrites expected.yaml from the current code:
only for a deliberate change, and read the diff before committing it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import (REPO, STATEFULSET_CONTROLLER, apply_patch, assert_valid_k8s, case_state, load_yaml, merge_patch,
                           review)
from webhook.app import Quartermaster, Settings
from webhook.engine.dispatch import MutateResult
from webhook.engine.offline import OfflineResult, admit_offline
from webhook.model.review import UserInfo, parse_review

CASES = REPO / "tests" / "cases" / "notebook"
DEFAULT_POLICY = REPO / "policies" / "notebook-injection.yaml"


@dataclass
class CaseRun:
    resource: dict[str, Any]
    qm: Quartermaster
    result: OfflineResult  # mutate, then validate: the one offline admission path
    patched: dict[str, Any]


def policy_dir(case: Path, tmp: Path) -> Path:
    """The case's policies, written to a directory in file order (the order the snapshot keeps)."""
    if (case / "policy.yaml").exists():
        docs = load_yaml(case / "policy.yaml")
    else:
        docs = load_yaml(DEFAULT_POLICY)
    overrides = load_yaml(case / "overrides.yaml") if (case / "overrides.yaml").exists() else []
    if overrides:
        docs = [merge_patch(d, overrides[0]) if d.get("kind") == "NotebookInjection" else d for d in docs]
    for index, doc in enumerate(docs):
        (tmp / f"{index:02d}-{doc['kind'].lower()}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return tmp


def build(case: Path, tmp: Path) -> Quartermaster:
    qm = Quartermaster.build(Settings(policies=policy_dir(case, tmp)), state=case_state(case))
    qm.load_policies()
    return qm


async def mutate(qm: Quartermaster, resource: dict[str, Any]) -> MutateResult:
    return await qm.engine.mutate(parse_review(json.dumps(review(resource, username=STATEFULSET_CONTROLLER)).encode()))


async def run_case(case: Path, tmp: Path) -> CaseRun:
    resource = load_yaml(case / "resource.yaml")[0]
    qm = build(case, tmp)
    result = await admit_offline(qm.engine, resource, user=UserInfo(STATEFULSET_CONTROLLER, ("system:authenticated",)))
    return CaseRun(resource, qm, result, apply_patch(resource, list(result.patch)))


def observed(run: CaseRun) -> dict[str, Any]:
    verdict = run.result
    out: dict[str, Any] = {"allowed": verdict.allowed}
    if not verdict.allowed:
        out["message"] = verdict.message
    elif verdict.patch:
        out["object"] = run.patched
    out["results"] = [{"policy": r.policy.name, "rule": r.rule, "outcome": r.outcome.value, "message": r.message}
                      for r in verdict.results]
    if verdict.warnings:
        out["warnings"] = list(verdict.warnings)
    return out


def case_names() -> list[str]:
    return sorted(p.name for p in CASES.iterdir() if (p / "resource.yaml").exists())


@pytest.mark.parametrize("name", case_names())
async def test_case(name: str, tmp_path: Path) -> None:
    case = CASES / name
    expected = load_yaml(case / "expected.yaml")[0]
    run = await run_case(case, tmp_path)
    got = json.loads(json.dumps(observed(run)))
    assert got.get("message") == expected.get("message")
    assert got["results"] == expected["results"]
    assert got.get("warnings") == expected.get("warnings")
    assert got.get("object") == expected.get("object")
    assert got["allowed"] == expected["allowed"]
    if not run.result.allowed:
        assert run.result.code == 403
        return
    assert run.patched == run.result.object  # what the API server computes is what the engine meant
    assert_valid_k8s(run.patched)
    again = await mutate(run.qm, run.patched)
    assert again.verdict.allowed and again.verdict.patch == (), again.verdict.patch


def test_every_case_is_complete() -> None:
    names = case_names()
    assert len(names) >= 15
    for name in names:
        assert (CASES / name / "expected.yaml").exists(), name


def regenerate(names: list[str]) -> None:
    import tempfile

    for name in names:
        case = CASES / name
        with tempfile.TemporaryDirectory() as tmp:
            run = asyncio.run(run_case(case, Path(tmp)))
        text = yaml.safe_dump(json.loads(json.dumps(observed(run))), sort_keys=False, width=120)
        (case / "expected.yaml").write_text(text)
        print(f"wrote {case / 'expected.yaml'}")


if __name__ == "__main__":
    regenerate(sys.argv[1:] or case_names())
