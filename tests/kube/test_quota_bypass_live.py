"""The charging table of docs/quota.md in live mode: objects in the test API server (real REST and watch),
the real server reading them through its informers, dry-run probe pods through HTTPS."""

import shutil
from dataclasses import replace

from tests.kube.conftest import FAST, async_eventually
from tests.platform.bypass_table import placed, profile, rows
from tests.platform.test_quota_bypass import check_rows
from tests.support import REPO, running_server

ROWS = rows()


async def test_every_shape_is_charged_as_documented_in_live_mode(apiserver, kubeconfig, tmp_path):
    policies = tmp_path / "policies"
    policies.mkdir()
    shutil.copy(REPO / "policies" / "profile-quota.yaml", policies)
    for index, row in enumerate(ROWS):
        apiserver.put(profile(index))
        for obj in row.objects:
            apiserver.put(placed(obj, index))
    settings = replace(FAST, kubeconfig=kubeconfig, backstop=False)
    async with running_server(policies, tmp_path, live=settings) as server:
        await async_eventually(lambda: server.qm.state.synced, timeout=20)
        assert await check_rows(server) == []
