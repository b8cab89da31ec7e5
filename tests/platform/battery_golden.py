"""What the batteries answer, byte for byte, over our cases: recorded once from the reference code,
compared on every run (`test_battery_golden.py`), so that a faster path can never change an answer.

Scenarios:
- every declarative case (tests/cases/dra, tests/cases/notebook) with its own policies, and again with
  all the default policies (rewrite, injection, quota) over examples/state;
- the mutated pod sent back to /mutate (reinvocation);
- a quota history in a few profiles: pods, volumes, claims and templates admitted until the limits
  are hit, updates, deletes, quantities of every form, an unknown accelerator, audit mode.

An observation is the verdict as the API server would see it: allowed, code, message, the patch (as the
exact JSON text, key order included), warnings, every rule result field, what was created.

`python -m tests.platform.battery_golden` rewrites the golden file from the current code: only from the
reference code, and read the diff before committing it.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any, Mapping

import orjson
import yaml

from tests.support import REPO, STATEFULSET_CONTROLLER, case_state, load_yaml
from webhook.app import Quartermaster, Settings
from webhook.engine.offline import OfflineResult, admit_offline
from webhook.model.review import UserInfo
from webhook.state.memory import InMemoryClusterState

GOLDEN = Path(__file__).parent / "golden" / "batteries.json"
# the StatefulSet controller: the requester whose notebook pods get an identity (quotas read no requester)
USER = UserInfo(STATEFULSET_CONTROLLER, ("system:authenticated",))
CASES = REPO / "tests" / "cases"


def _text(value: Any) -> str:
    return orjson.dumps(value, default=str).decode()


def observe(result: OfflineResult) -> dict[str, Any]:
    return {
        "allowed": result.allowed,
        "code": result.code,
        "message": result.message,
        "patch": _text([dict(op) for op in result.patch]),
        "object": _text(result.object),
        "created": _text([dict(o) for o in result.created]),
        "warnings": list(result.warnings),
        # `quiet` (a VAP Audit binding's result, never warned) came after the recording: compared when set
        "results": [{f.name: str(getattr(r, f.name)) for f in dataclasses.fields(r) if f.name != "quiet" or r.quiet}
                    for r in result.results],
    }


def _policies(tmp: Path, docs: list[Mapping[str, Any]]) -> Path:
    directory = tmp / "policies"
    directory.mkdir(parents=True, exist_ok=True)
    for index, doc in enumerate(docs):
        (directory / f"{index:02d}.yaml").write_text(yaml.safe_dump(dict(doc), sort_keys=False))
    return directory


def _case_policies(kind: str, case: Path) -> list[Mapping[str, Any]]:
    if (case / "policy.yaml").exists():
        docs = load_yaml(case / "policy.yaml")
    else:
        name = {"dra": "device-claim-rewrite.yaml", "notebook": "notebook-injection.yaml"}[kind]
        docs = load_yaml(REPO / "policies" / name)
    overrides = load_yaml(case / "overrides.yaml") if (case / "overrides.yaml").exists() else []
    if overrides:
        from tests.support import merge_patch
        docs = [merge_patch(d, overrides[0]) if d.get("kind") == "NotebookInjection" else d for d in docs]
    return docs


def _default_policies() -> list[Mapping[str, Any]]:
    return [doc for path in sorted((REPO / "policies").glob("*.yaml")) for doc in load_yaml(path)]


def _build(tmp: Path, docs: list[Mapping[str, Any]], state: Any) -> Quartermaster:
    qm = Quartermaster.build(Settings(policies=_policies(tmp, docs)), state=state)
    qm.load_policies()
    return qm


async def _case(kind: str, case: Path, docs: list[Mapping[str, Any]], state: Any) -> dict[str, Any]:
    resource = load_yaml(case / "resource.yaml")[0]
    options = (load_yaml(case / "request.yaml") or [{}])[0] if (case / "request.yaml").exists() else {}
    with tempfile.TemporaryDirectory() as tmp:
        qm = _build(Path(tmp), docs, state)
        old = resource if options.get("oldObject") == "resource" else None
        first = await admit_offline(qm.engine, copy.deepcopy(resource), operation=options.get("operation", "CREATE"),
                                    old=old, user=USER, dry_run=bool(options.get("dryRun", False)))
        out = {"first": observe(first)}
        if first.allowed and first.object is not None:
            again = await admit_offline(qm.engine, json.loads(_text(first.object)), user=USER, dry_run=True)
            out["again"] = observe(again)
    return out


def _full_state(case: Path) -> InMemoryClusterState:
    seed = InMemoryClusterState.from_directory(REPO / "examples" / "state")
    extra = load_yaml(case / "state.yaml") if (case / "state.yaml").exists() else []
    objects = [o for k in ("Namespace", "Profile", "Pod", "PersistentVolumeClaim", "ResourceClaim",
                           "ResourceClaimTemplate") for o in seed.list(k)]
    return InMemoryClusterState([*objects, *extra])


async def case_scenarios() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("dra", "notebook"):
        for case in sorted(p for p in (CASES / kind).iterdir() if (p / "resource.yaml").exists()):
            out[f"{kind}/{case.name}"] = await _case(kind, case, _case_policies(kind, case), case_state(case))
            out[f"{kind}/{case.name}+defaults"] = await _case(kind, case, _default_policies(), _full_state(case))
    return out


# --- quota history ---------------------------------------------------------------------------------
def _ns(name: str, profile_class: str | None = None) -> dict[str, Any]:
    labels = {"kubernetes.io/metadata.name": name, "app.kubernetes.io/part-of": "kubeflow-profile"}
    if profile_class:
        labels["quartermaster.dev/profile-class"] = profile_class
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": labels, "annotations": {"owner": f"{name}@example.org"}}}


def _pod(name: str, ns: str, limits: Mapping[str, Any] | None = None, requests: Mapping[str, Any] | None = None,
         notebook: bool = True, **spec: Any) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if limits:
        resources["limits"] = dict(limits)
    if requests:
        resources["requests"] = dict(requests)
    labels = {"notebook-name": name} if notebook else {"app": name}
    container = {"name": name, "image": "jupyter/scipy:1", "resources": resources}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"containers": [container], **spec}}


def _pvc(name: str, ns: str, size: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": ns},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}}


def _claim(name: str, ns: str, count: int | None = 1, mode: str | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu.nvidia.com"}
    if mode:
        exactly["allocationMode"] = mode
    if count is not None:
        exactly["count"] = count
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": ns},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}


def _ephemeral(size: Any) -> list[dict[str, Any]]:
    return [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}}}}]


def quota_steps() -> list[tuple[str, dict[str, Any]]]:
    """(label, admit_offline keyword arguments), in order; each sees what the earlier ones recorded."""
    quantities = {"cpu": "0.5", "memory": "1.5Gi", "ephemeral-storage": "+2G"}
    steps: list[tuple[str, dict[str, Any]]] = [
        ("gpu pod fits", {"resource": _pod("nb-a", "jdoe", {"nvidia.com/gpu": "1", "cpu": "600m", "memory": "2Gi"},
                                           {"cpu": "500m", "memory": "1Gi"})}),
        ("second gpu pod over quota", {"resource": _pod("nb-b", "jdoe", {"nvidia.com/gpu": 1})}),
        ("dry-run over quota", {"resource": _pod("nb-c", "jdoe", {"nvidia.com/gpu": "1"}), "dry_run": True}),
        ("odd quantities", {"resource": _pod("nb-q", "jdoe", quantities, {"cpu": "1e-3", "memory": "12345678901234567890n"})}),
        ("int and float quantities", {"resource": _pod("nb-f", "jdoe", {"cpu": 2, "memory": 1.5})}),
        ("out of range quantity", {"resource": _pod("nb-r", "jdoe", {"memory": "1e99999999"})}),
        ("out of range ephemeral", {"resource": _pod("nb-e", "jdoe", volumes=_ephemeral("9E"))}),
        ("out of range ephemeral exponent", {"resource": _pod("nb-x", "jdoe", volumes=_ephemeral("1e99999999"))}),
        ("huge binary ephemeral", {"resource": _pod("nb-h", "asmith", volumes=_ephemeral("9000000000000000000Ei"))}),
        ("unknown accelerator", {"resource": _pod("nb-u", "jdoe", {"example.com/gpu": "1"})}),
        ("mig in team", {"resource": _pod("nb-m", "ml-team", {"nvidia.com/mig-1g.10gb": "2"}, notebook=False)}),
        ("amd in team", {"resource": _pod("nb-amd", "ml-team", {"amd.com/gpu": "3"}, notebook=False)}),
        ("pvc fits", {"resource": _pvc("data", "jdoe", "20Gi")}),
        ("pvc over", {"resource": _pvc("more", "jdoe", "20Gi")}),
        ("pvc expand over", {"resource": _pvc("data", "jdoe", "40Gi"), "operation": "UPDATE",
                             "old": _pvc("data", "jdoe", "20Gi")}),
        ("pvc shrink", {"resource": _pvc("data", "jdoe", "10Gi"), "operation": "UPDATE",
                        "old": _pvc("data", "jdoe", "20Gi")}),
        ("pvc decimal", {"resource": _pvc("dec", "asmith", "1.5e10")}),
        ("claim fits", {"resource": _claim("shared", "ml-team", 2)}),
        ("claim all", {"resource": _claim("every", "ml-team", None, "All")}),
        ("claim over", {"resource": _claim("big", "ml-team", 9)}),
        ("delete gpu pod", {"resource": None, "operation": "DELETE", "old": _pod("nb-a", "jdoe")}),
        ("gpu pod fits again", {"resource": _pod("nb-d", "jdoe", {"nvidia.com/gpu": "1"})}),
        ("init and sidecar gpus", {"resource": _pod("nb-i", "ml-team", {"nvidia.com/gpu": "1"}, notebook=False, initContainers=[
            {"name": "prep", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": "2"}}},
            {"name": "side", "image": "busybox", "restartPolicy": "Always",
             "resources": {"limits": {"nvidia.com/gpu": "1"}}}])}),
        ("not a profile", {"resource": _pod("web", "default", {"nvidia.com/gpu": "4"}, notebook=False)}),
    ]
    return steps


async def quota_history(audit: bool) -> dict[str, Any]:
    docs = _default_policies()
    if audit:
        docs = [{**d, "spec": {**d["spec"], "mode": "Audit"}} if d["kind"] == "ProfileQuota" else d for d in docs]
    state = InMemoryClusterState([_ns("jdoe"), _ns("asmith"), _ns("ml-team", "team"),
                                  {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}])
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        qm = _build(Path(tmp), docs, state)
        for index, (label, kwargs) in enumerate(quota_steps()):
            result = await admit_offline(qm.engine, user=USER, **copy.deepcopy(kwargs))
            out[f"{index:02d} {label}"] = observe(result)
    return out


async def observe_all() -> dict[str, Any]:
    out = await case_scenarios()
    for audit in (False, True):
        for label, observed in (await quota_history(audit)).items():
            out[f"quota{'-audit' if audit else ''}/{label}"] = observed
    return out


def digests(observed: Mapping[str, Any]) -> dict[str, Any]:
    """Per field, a digest of its exact JSON text (the full observations would be a megabyte of pods; the
    case tests show the objects themselves). `allowed` stays readable."""
    out: dict[str, Any] = {}
    for key, value in observed.items():
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=False)
        out[key] = value if key == "allowed" else hashlib.sha256(text.encode()).hexdigest()[:16]
    return out


def snapshot() -> dict[str, Any]:
    return {name: {part: digests(observed) for part, observed in parts.items()} if "first" in parts
            else digests(parts) for name, parts in asyncio.run(observe_all()).items()}


if __name__ == "__main__":
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(snapshot(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
