"""The declarative DRA cases (tests/cases/dra/*), through the real engine, plus the checks every case must pass:
the patch applies to the original with a JSON-Patch library, every pod and template is valid Kubernetes 1.34,
templates exist in the state unless dryRun, and a reinvocation on the patched pod changes nothing."""

from __future__ import annotations

import json
from typing import Any, Mapping

import pytest

from tests.platform.dra.case_runner import CASES, CaseRun, observed, read_one, review_body, run_case
from tests.support import assert_valid_k8s
from webhook.model.review import parse_review
from webhook.platform.dra.templates import MANAGED_BY_LABEL, MANAGED_BY_VALUE, content_name

CASE_NAMES = sorted(p.name for p in CASES.iterdir() if (p / "resource.yaml").exists())
ADMITTED = [n for n in CASE_NAMES if read_one(CASES / n / "expected.yaml")["allowed"]]
LEGACY_PREFIXES = ("nvidia.com/gpu", "nvidia.com/mig-")


def test_the_issue_cases_are_all_here():
    wanted = {"one-gpu", "several-gpus-one-container", "two-gpu-containers", "limits-and-requests", "mig-profiles",
              "mixed-dra-and-legacy", "sidecar-and-init", "user-chosen-model", "dry-run", "passthrough",
              "already-rewritten", "namespace-not-selected"}
    assert wanted <= set(CASE_NAMES)


def _containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = pod.get("spec") or {}
    return list(spec.get("initContainers") or []) + list(spec.get("containers") or [])


def _check_rewritten_pod(run: CaseRun) -> None:
    pod = run.patched
    claims = {c["name"]: c for c in pod["spec"].get("resourceClaims") or []}
    assert len(claims) == len(pod["spec"].get("resourceClaims") or []), "pod claim names must be unique"
    created = {t["metadata"]["name"] for t in run.result.created}
    for container in _containers(pod):
        resources = container.get("resources") or {}
        for part in ("limits", "requests"):
            assert not [k for k in resources.get(part) or {} if k.startswith(LEGACY_PREFIXES)], container["name"]
        refs = [c["name"] for c in resources.get("claims") or []]
        assert len(refs) == len(set(refs))
        for ref in refs:
            assert ref in claims, f"{container['name']} references {ref}, which is not in spec.resourceClaims"
    original = {c["name"] for c in run.resource["spec"].get("resourceClaims") or []}
    for name, claim in claims.items():
        if name not in original:
            assert claim["resourceClaimTemplateName"] in created


def _check_templates(run: CaseRun) -> None:
    for template in run.result.created:
        assert_valid_k8s(template)
        meta = template["metadata"]
        assert meta["labels"][MANAGED_BY_LABEL] == MANAGED_BY_VALUE
        content = {"labels": meta["labels"], "annotations": meta["annotations"], "spec": template["spec"]}
        assert meta["name"] == content_name(meta["name"].rsplit("-", 1)[0], content)  # named by content
        stored = run.qm.state.get("ResourceClaimTemplate", meta["namespace"], meta["name"])
        if run.options.get("dryRun"):
            assert stored is None, "dryRun must not create anything"
        else:
            assert stored is not None and stored["spec"] == template["spec"]


@pytest.mark.parametrize("name", CASE_NAMES)
async def test_case(name: str):
    case = CASES / name
    run = await run_case(case)
    expected = read_one(case / "expected.yaml")
    got = json.loads(json.dumps(observed(run)))
    for key in ("allowed", "message", "object", "templates", "results", "warnings"):
        assert got.get(key) == expected.get(key), f"{name}: {key} differs"
    if not run.result.allowed:
        assert run.result.patch == () and run.result.created == ()
        return
    assert_valid_k8s(run.patched)
    _check_templates(run)
    if run.result.patch:
        _check_rewritten_pod(run)


@pytest.mark.parametrize("name", ADMITTED)
async def test_reinvocation_changes_nothing(name: str):
    """reinvocationPolicy: IfNeeded sends the mutated pod again: no patch, nothing more to create."""
    run = await run_case(CASES / name)
    again = await run.qm.engine.mutate(parse_review(review_body(run.patched, run.options)))
    assert again.verdict.allowed
    assert again.verdict.patch == ()
    assert again.created == ()
