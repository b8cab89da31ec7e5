"""The DRA rewrite end to end: the example AdmissionReviews over real HTTPS, and `quartermaster apply` as a process."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys

import yaml

from tests.support import REPO, apply_patch, assert_valid_k8s, decode_patch, running_server

POLICY = REPO / "policies" / "device-claim-rewrite.yaml"
STATE = REPO / "examples" / "state"


def example_review(name: str) -> dict:
    return json.loads((REPO / "examples" / f"review-{name}-pod.json").read_text())


def template_refs(pod: dict) -> list[str]:
    return [c["resourceClaimTemplateName"] for c in pod["spec"].get("resourceClaims") or []]


async def test_example_reviews_are_rewritten_and_templates_created_before_admission(tmp_path):
    async with running_server(POLICY, tmp_path, state=STATE) as server:
        for name in ("gpu", "mig"):
            body = example_review(name)
            response = await server.admit("/mutate", body)
            assert response["allowed"] and response["patchType"] == "JSONPatch"
            pod = apply_patch(body["request"]["object"], decode_patch(response))
            assert_valid_k8s(pod)
            (template,) = template_refs(pod)
            stored = server.qm.state.get("ResourceClaimTemplate", "jdoe", template)
            assert stored is not None and stored["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "quartermaster"
            again = copy.deepcopy(body)
            again["request"]["uid"] += "-again"
            again["request"]["object"] = pod
            assert "patch" not in await server.admit("/mutate", again)  # reinvocation: nothing more to do


async def test_dry_run_rewrites_but_creates_nothing(tmp_path):
    async with running_server(POLICY, tmp_path, state=STATE) as server:
        body = example_review("mig")
        body["request"]["dryRun"] = True
        response = await server.admit("/mutate", body)
        pod = apply_patch(body["request"]["object"], decode_patch(response))
        (template,) = template_refs(pod)
        assert server.qm.state.get("ResourceClaimTemplate", "jdoe", template) is None
        assert server.qm.state.list("ResourceClaimTemplate") == []


async def test_update_is_not_rewritten(tmp_path):
    async with running_server(POLICY, tmp_path, state=STATE) as server:
        body = example_review("gpu")
        body["request"]["operation"] = "UPDATE"
        body["request"]["oldObject"] = copy.deepcopy(body["request"]["object"])
        response = await server.admit("/mutate", body)
        assert response["allowed"] and "patch" not in response


def _quartermaster() -> list[str]:
    found = shutil.which("quartermaster", path=str(REPO.parent / "venv" / "bin")) or shutil.which("quartermaster")
    return [found] if found else [sys.executable, "-m", "webhook"]


def test_apply_prints_only_yaml_the_pod_then_its_template():
    proc = subprocess.run([*_quartermaster(), "apply", "--detailed-results", "--policies", "policies", "--state",
                           "examples/state", "examples/gpu-pod.yaml"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    docs = list(yaml.safe_load_all(proc.stdout))  # stdout is YAML and nothing else
    assert [d["kind"] for d in docs] == ["Pod", "ResourceClaimTemplate"]
    pod, template = docs
    for doc in docs:
        assert_valid_k8s(doc)
    assert template_refs(pod) == [template["metadata"]["name"]]
    assert template["metadata"]["namespace"] == "jdoe"
    limits = pod["spec"]["containers"][0]["resources"]["limits"]
    assert "nvidia.com/gpu" not in limits and limits["cpu"] == "4"
    assert "device-claim-rewrite" in proc.stderr and "rewrite" in proc.stderr  # the table goes to stderr


async def test_a_dry_run_is_refused_as_the_real_create_is_though_its_template_is_not_created(tmp_path):
    """A dry run creates no claim template, so the validating call alone would count the rewritten pod's GPUs as
    nothing and admit what the real create is refused: the mutating call judges it with the template laid over."""
    async with running_server(REPO / "policies", tmp_path, state=STATE) as server:
        body = example_review("gpu")
        body["request"]["object"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 2
        dry = copy.deepcopy(body)
        dry["request"]["dryRun"] = True
        refused = await server.admit("/mutate", dry)
        assert refused["allowed"] is False, refused
        assert server.qm.state.list("ResourceClaimTemplate", "jdoe") == []  # still nothing left behind
        # the real create: rewritten, its template created, then refused by the validating call with the same reason
        mutated = await server.admit("/mutate", body)
        assert mutated["allowed"], mutated
        real = copy.deepcopy(body)
        real["request"]["object"] = apply_patch(body["request"]["object"], decode_patch(mutated))
        validated = await server.admit("/validate", real)
        assert validated["allowed"] is False
        assert refused["status"]["message"] == validated["status"]["message"]
        assert refused["status"]["code"] == validated["status"]["code"]


async def test_a_dry_run_within_the_quota_is_admitted_and_rewritten(tmp_path):
    async with running_server(REPO / "policies", tmp_path, state=STATE) as server:
        body = example_review("gpu")
        body["request"]["dryRun"] = True
        response = await server.admit("/mutate", body)
        assert response["allowed"] and response["patchType"] == "JSONPatch", response
        assert template_refs(apply_patch(body["request"]["object"], decode_patch(response)))
        assert server.qm.state.list("ResourceClaimTemplate", "jdoe") == []
