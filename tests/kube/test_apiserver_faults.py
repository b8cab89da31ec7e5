"""Live mode when the Kubernetes API goes away: down at start-up (connection refused) and down mid-run,
then back. The webhook stays up (/healthz), says unready while its cache is not synced (/readyz 503), lets
each policy's failurePolicy decide meanwhile (Fail: refused with a reason; Ignore: admitted with a warning),
and recovers on its own, without a restart, once the API answers again."""

import json
import shutil
from dataclasses import replace

import pytest

from tests.kube.apiserver import FakeApiServer
from tests.kube.conftest import FAST, async_eventually
from tests.kube.objects import namespace, pod
from tests.support import REPO, free_port, review, running_server


@pytest.fixture
def policies(tmp_path):
    directory = tmp_path / "policies"
    directory.mkdir()
    shutil.copy(REPO / "policies" / "profile-quota.yaml", directory)
    ignore = (REPO / "policies" / "profile-quota.yaml").read_text().replace("name: profile-quota", "name: lenient-quota")
    (directory / "lenient.yaml").write_text(ignore.replace("failurePolicy: Fail", "failurePolicy: Ignore"))
    return directory


def settings(kubeconfig):
    return replace(FAST, kubeconfig=kubeconfig, backstop=False)


async def readyz(server):
    status, text = await server.get("/readyz")
    return status, json.loads(text)


async def decision(server, name):
    return await server.admit("/validate", review(pod(name, gpus=1), dry_run=True))


def restarted(old: FakeApiServer) -> FakeApiServer:
    """The same API server process coming back on the same address, with its objects (etcd kept them)."""
    new = FakeApiServer(bookmark_interval=old.bookmark_interval, port=old.port)
    new.objects, new.history, new.rv = old.objects, old.history, old.rv
    return new.start()


def only_lenient(policies):
    (policies / "profile-quota.yaml").unlink()


async def test_api_down_at_start_up_then_back(policies, tmp_path):
    api = FakeApiServer(bookmark_interval=0.1, port=free_port())  # not started: connections are refused
    api.put(namespace("jdoe"))
    kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
    async with running_server(policies, tmp_path, live=settings(kubeconfig)) as server:
        assert (await server.get("/healthz"))[0] == 200
        status, body = await readyz(server)
        assert status == 503 and body["status"] == "unready" and body["stateSynced"] is False
        refused = await decision(server, "early")
        assert refused["allowed"] is False and "not synced" in refused["status"]["message"]
        api.start()
        try:
            await async_eventually(lambda: server.qm.state.synced, timeout=20, message="never synced")
            assert (await readyz(server))[0] == 200
            assert (await decision(server, "later"))["allowed"] is True
        finally:
            api.stop()


async def test_api_down_mid_run_then_back(policies, tmp_path):
    api = FakeApiServer(bookmark_interval=0.1, port=free_port()).start()
    api.put(namespace("jdoe"))
    kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
    async with running_server(policies, tmp_path, live=settings(kubeconfig)) as server:
        await async_eventually(lambda: server.qm.state.synced, timeout=20)
        assert (await decision(server, "before"))["allowed"] is True
        api.stop()
        await async_eventually(lambda: not server.qm.state.synced, timeout=20, message="a dead API went unnoticed")
        status, body = await readyz(server)
        assert status == 503 and (await server.get("/healthz"))[0] == 200
        during = await decision(server, "during")
        assert during["allowed"] is False and "[profile-quota/state]" in during["status"]["message"]
        # the Ignore copy of the policy reports the same problem as a warning instead of refusing
        assert any("lenient-quota" in w and "not synced" in w for w in during.get("warnings", []))
        api = restarted(api)
        try:
            await async_eventually(lambda: server.qm.state.synced, timeout=30, message="never recovered")
            assert (await readyz(server))[0] == 200
            assert (await decision(server, "after"))["allowed"] is True
        finally:
            api.stop()


async def test_failure_policy_ignore_admits_while_unsynced(policies, tmp_path):
    only_lenient(policies)
    api = FakeApiServer(bookmark_interval=0.1, port=free_port())
    kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
    async with running_server(policies, tmp_path, live=settings(kubeconfig)) as server:
        admitted = await decision(server, "p")
        assert admitted["allowed"] is True and "not synced" in admitted["warnings"][0]
