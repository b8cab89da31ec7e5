"""Issue 39's quota findings in live mode: objects in the test API server (real REST and watch), the real server
reading them through its informers, tenants' reviews through HTTPS."""

import shutil
from dataclasses import replace

from tests.kube.conftest import FAST, async_eventually
from tests.platform.quota.builders import namespace, pod
from tests.platform.quota.test_extended_claims import scheduler_claim
from tests.support import REPO, review, running_server


async def _live(apiserver, kubeconfig, tmp_path):
    policies = tmp_path / "policies"
    policies.mkdir()
    shutil.copy(REPO / "policies" / "profile-quota.yaml", policies)
    return running_server(policies, tmp_path, live=replace(FAST, kubeconfig=kubeconfig, backstop=False))


async def test_forged_extended_resource_claims_are_charged_in_live_mode(apiserver, kubeconfig, tmp_path):
    apiserver.put(namespace("jdoe"))
    stored = apiserver.put(pod("trainer", gpus=1, claims={"gpu0": "forged-0"}))
    async with await _live(apiserver, kubeconfig, tmp_path) as server:
        await async_eventually(lambda: server.qm.state.synced, timeout=20)
        forged = await server.admit("/validate", review(scheduler_claim(stored, name="forged-0")))
        assert forged["allowed"] is False and "in use 1 (Pod trainer: 1)" in forged["status"]["message"]
        made = await server.admit("/validate", review(scheduler_claim(stored), username="system:kube-scheduler"))
        assert made["allowed"], made


async def test_a_namespace_the_informer_has_not_delivered_is_refused(apiserver, kubeconfig, tmp_path):
    apiserver.put(namespace("jdoe"))
    async with await _live(apiserver, kubeconfig, tmp_path) as server:
        await async_eventually(lambda: server.qm.state.synced, timeout=20)
        response = await server.admit("/validate", review(pod("trainer", "fresh", gpus=5)))
        assert response["allowed"] is False and "does not know namespace 'fresh' yet" in response["status"]["message"]
