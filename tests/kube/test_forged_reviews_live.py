"""Live mode, reviews posted to the webhook port by someone who is not the API server: the informers are
the state, so a forged review changes none of it. Here a DELETE review of a pod still in flight used to
release its quota reservation, and a second GPU pod then fitted a one-GPU profile."""

import shutil
from dataclasses import replace

from tests.kube.conftest import FAST, async_eventually
from tests.platform.quota.builders import namespace, pod, pvc
from tests.support import REPO, review, running_server


async def _live_quota_server(apiserver, kubeconfig, tmp_path):
    policies = tmp_path / "policies"
    policies.mkdir()
    shutil.copy(REPO / "policies" / "profile-quota.yaml", policies)
    apiserver.put(namespace("jdoe"))  # a personal profile: 1 GPU, 30Gi
    return running_server(policies, tmp_path, live=replace(FAST, kubeconfig=kubeconfig, backstop=False))


async def test_a_forged_delete_review_releases_no_reservation(apiserver, kubeconfig, tmp_path):
    async with await _live_quota_server(apiserver, kubeconfig, tmp_path) as server:
        await async_eventually(lambda: server.qm.state.synced, timeout=20)
        # the API server's review of a 1-GPU pod: admitted and reserved until the informer shows it
        first = pod("train-a", gpus=1, uid="9b0e4a52-0000-4000-8000-00000000000a")
        assert (await server.admit("/validate", review(first)))["allowed"]
        # forged: the same pod "deleted" (the API server never deleted it; it is being persisted)
        assert (await server.admit("/validate", review(None, operation="DELETE", old=first)))["allowed"]
        second = pod("train-b", gpus=1, uid="9b0e4a52-0000-4000-8000-00000000000b")
        answer = await server.admit("/validate", review(second))
        assert not answer["allowed"], "a forged DELETE made room for a second GPU in a one-GPU profile"
        assert "GPU" in answer["status"]["message"]
        assert server.qm.state.get("Pod", "jdoe", "train-a") is None  # and no review put anything in the state


async def test_a_forged_create_review_puts_nothing_in_the_state(apiserver, kubeconfig, tmp_path):
    async with await _live_quota_server(apiserver, kubeconfig, tmp_path) as server:
        await async_eventually(lambda: server.qm.state.synced, timeout=20)
        claim = pvc("data", size="30Gi")
        claim["metadata"]["uid"] = "9b0e4a52-0000-4000-8000-00000000000c"
        assert (await server.admit("/validate", review(claim)))["allowed"]
        assert server.qm.state.get("PersistentVolumeClaim", "jdoe", "data") is None
        # held only as an expiring reservation (reservationSeconds), never as an object of the profile
        (ledger,) = server.qm.ledgers.all()
        (held,) = ledger.pending("jdoe", server.qm.state)
        assert held.expires_at <= ledger.clock() + 30
