"""ProfileQuota through the real HTTPS server: simultaneous creates admit exactly what fits."""

import asyncio
import uuid

import pytest

from tests.platform.quota.builders import policy_text, pod, pvc, registry, seeded_state
from tests.kinds import REQUIRE_TEAM
from tests.support import assert_valid_k8s, policy_dir, review, running_server

# A second validating policy that yields to the event loop after the quota decided, as webhooks
# and policies after ours do: without reservations, every request in the burst would be counted
# against the same usage and all of them admitted.
SLOW_SECOND_POLICY = REQUIRE_TEAM + "  sleepSeconds: 0.01\n"


@pytest.fixture
def policies(tmp_path):
    return policy_dir(tmp_path / "policies", {"0-quota.yaml": policy_text(), "1-slow.yaml": SLOW_SECOND_POLICY})


def labelled(obj):
    obj["metadata"]["labels"] = {"team": "ml"}
    assert_valid_k8s(obj)
    return obj


async def burst(server, objects):
    responses = await asyncio.gather(*(server.admit("/validate", review(obj, uid=str(uuid.uuid4()))) for obj in objects))
    return [r for r in responses if r["allowed"]], [r for r in responses if not r["allowed"]]


async def test_simultaneous_gpu_pods_admit_exactly_what_fits(policies, tmp_path):
    state = seeded_state()
    async with running_server(policies, tmp_path, qm_state=state, registry=registry) as server:
        team = [labelled(pod(f"w{i:02d}", "ml-team", gpus=1)) for i in range(24)]
        personal = [labelled(pod(f"nb{i:02d}", "jdoe", gpus=1)) for i in range(10)]
        allowed, denied = await burst(server, team + personal)
        assert len(allowed) == 8 + 1 and len(denied) == 16 + 9
        assert len(state.list("Pod", "ml-team")) == 8 and len(state.list("Pod", "jdoe")) == 1
        assert all("GPU quota exceeded" in r["status"]["message"] for r in denied)
        ledger = server.qm.ledgers.for_policy("profile-quota")
        assert ledger.pending("ml-team", state) == () and ledger.pending("jdoe", state) == ()  # all reflected


async def test_simultaneous_volumes_admit_exactly_what_fits(policies, tmp_path):
    state = seeded_state()
    async with running_server(policies, tmp_path, qm_state=state, registry=registry) as server:
        volumes = [labelled(pvc(f"data{i}", "jdoe", size="10Gi")) for i in range(12)]
        allowed, denied = await burst(server, volumes)
        assert len(allowed) == 3 and len(state.list("PersistentVolumeClaim", "jdoe")) == 3
        assert all("Storage quota exceeded in profile 'jdoe'" in r["status"]["message"] for r in denied)


async def test_denial_over_https_explains_and_audit_mode_warns(tmp_path):
    directory = tmp_path / "audit"
    directory.mkdir()
    (directory / "quota.yaml").write_text(policy_text(mode="Audit"))
    state = seeded_state(pod("nb-a", gpus=1))
    async with running_server(directory, tmp_path, qm_state=state, registry=registry) as server:
        response = await server.admit("/validate", review(pod("train", gpus=1)))
        assert response["allowed"] is True
        assert response["warnings"][0].startswith("profile-quota: over GPU quota in 'jdoe' (")
        assert "in use 1 (Pod nb-a: 1)" in response["auditAnnotations"]["profile-quota.gpu-quota"]
