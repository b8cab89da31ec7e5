"""A QueueAssignment that queues pods must say which DeviceClasses Kueue maps, and list every class the loaded DRA
rewrite uses: otherwise Kueue finds the pods' claims Inadmissible and they stay gated for good (seen with the real
Kueue in tests/cluster/test_kueue.py). The policies are the shipped ones (policies/, examples/)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from tests.support import REPO
from webhook.app import build_registry
from webhook.cel import CelCompiler
from webhook.policy.loader import LoadResult, PolicyLoader
from webhook.state.ledger import ReservationLedgers

QUEUE = yaml.safe_load((REPO / "examples" / "queue-assignment.yaml").read_text())
REWRITE = yaml.safe_load((REPO / "policies" / "device-claim-rewrite.yaml").read_text())
REWRITE_CLASSES = sorted({device["deviceClassName"] for device in REWRITE["spec"]["devices"]})


def loaded(tmp_path: Path, *docs: dict) -> LoadResult:
    for number, doc in enumerate(docs):
        (tmp_path / f"{number}.yaml").write_text(yaml.safe_dump(doc))
    return PolicyLoader(build_registry(ReservationLedgers()), CelCompiler()).load(tmp_path)


def queue(**spec) -> dict:
    doc = copy.deepcopy(QUEUE)
    doc["spec"].update(spec)
    for key, value in spec.items():
        if value is None:
            del doc["spec"][key]
    return doc


def test_the_shipped_queue_assignment_lists_every_class_the_shipped_rewrite_uses(tmp_path):
    assert sorted(QUEUE["spec"]["mappedDeviceClasses"]) == REWRITE_CLASSES
    assert loaded(tmp_path, REWRITE, QUEUE).ok


@pytest.mark.parametrize("mapped, said", [
    (None, "does not say which DeviceClasses Kueue maps"),
    (["gpu.nvidia.com"], "does not list mig.nvidia.com"),
    ([], "does not list gpu.nvidia.com, mig.nvidia.com"),
])
def test_a_class_kueue_is_not_said_to_map_refuses_the_queue_assignment_with_the_class(tmp_path, mapped, said):
    result = loaded(tmp_path, REWRITE, queue(mappedDeviceClasses=mapped))
    (error,) = result.errors
    assert error.field == "spec.mappedDeviceClasses" and error.message.startswith(said)
    assert "(DeviceClaimRewrite device-claim-rewrite)" in error.message and "docs/kueue.md" in error.message
    assert [p.id.kind for p in result.policies] == ["DeviceClaimRewrite"]  # the rewrite itself still loads


def test_nothing_to_map_without_a_rewrite_without_queued_pods_or_with_passthrough(tmp_path):
    for folder in ("alone", "jobs", "passthrough"):
        (tmp_path / folder).mkdir()
    assert loaded(tmp_path / "alone", queue(mappedDeviceClasses=None)).ok
    jobs_only = queue(mappedDeviceClasses=None, workloads=[{"apiVersion": "batch/v1", "kind": "Job", "suspend": True}])
    assert loaded(tmp_path / "jobs", REWRITE, jobs_only).ok  # a Job's pods are the Job's: Kueue admits the Job
    passthrough = copy.deepcopy(REWRITE)
    passthrough["spec"]["strategy"] = "Passthrough"  # pods keep their extended resources: no claims to map
    assert loaded(tmp_path / "passthrough", passthrough, queue(mappedDeviceClasses=None)).ok
