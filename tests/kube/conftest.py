import time
from dataclasses import replace
from typing import Callable

import pytest

from tests.kube.apiserver import FakeApiServer
from tests.support import eventually as async_eventually  # noqa: F401  (the kube tests' async poller)
from webhook.kube.calls import BlockingCalls
from webhook.kube.client import KubeApi
from webhook.kube.settings import LiveSettings
from webhook.kube.state import LiveClusterState

# Small numbers so that reconnects, stalls and batches happen within a test's time.
FAST = LiveSettings(connect_timeout=2.0, api_timeout=3.0, list_timeout=5.0, watch_seconds=30, watch_idle_seconds=3.0,
                    stall_seconds=3.0, backoff_initial=0.02, backoff_max=0.2, absent_recheck_seconds=0.3,
                    report_interval=0.05, report_resolve_seconds=2.0, lease_seconds=5.0, lease_renew_seconds=0.3,
                    lease_retry_seconds=0.1, backstop_interval=0.2, scan_interval=0.0, namespace="quartermaster",
                    identity="replica-a")


def eventually(check: Callable[[], object], timeout: float = 10.0, message: str = "") -> object:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, message or "condition not reached"
        time.sleep(0.02)


@pytest.fixture
def apiserver():
    server = FakeApiServer(bookmark_interval=0.1).start()
    yield server
    server.stop()


@pytest.fixture
def kubeconfig(apiserver, tmp_path):
    return apiserver.kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def kube_api(kubeconfig):
    api = KubeApi.connect(kubeconfig, in_cluster=False)
    yield api
    api.close()


@pytest.fixture
def calls():
    pool = BlockingCalls()
    yield pool
    pool.shutdown()


@pytest.fixture
def live_state(kube_api, calls):
    states = []

    def make(**overrides) -> LiveClusterState:
        state = LiveClusterState(kube_api, replace(FAST, **overrides), calls)
        states.append(state)
        return state

    yield make
    for state in states:
        state.stop()
