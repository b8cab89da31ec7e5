"""`quartermaster token-refresher` as the kubelet runs it, against a real OpenID Connect provider
(oidc-provider on Node.js): discovery, refresh-token grant with rotation, RFC 8693 exchange, the
EOS token file, readiness, metrics, an IdP outage while the token is valid."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.support import free_port

class Sidecar:
    def __init__(self, process: subprocess.Popen, token_file: Path, port: int) -> None:
        self.process, self.token_file, self.port = process, token_file, port
        self.ready_file = token_file.parent / ".ready"

    def wait_for(self, condition, timeout: float, what: str):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            assert self.process.poll() is None, f"refresher exited: {self.process.stderr.read()}"
            time.sleep(0.1)
        raise AssertionError(f"{what} within {timeout}s")

    def token(self) -> str | None:
        try:
            return self.token_file.read_text()
        except FileNotFoundError:
            return None

    def get(self, path: str) -> requests.Response:
        return requests.get(f"http://127.0.0.1:{self.port}{path}", timeout=5)

    def metric(self, name: str, labels: str = "") -> float:
        for line in self.get("/metrics").text.splitlines():
            if line.startswith(name + (f"{{{labels}}}" if labels else " ")):
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=10)


@pytest.fixture
def run_sidecar(tmp_path, credentials, idp):
    started: list[Sidecar] = []

    def run(*extra: str) -> Sidecar:
        token_dir = tmp_path / "oidc-token"
        token_dir.mkdir()
        port = free_port()
        process = subprocess.Popen(
            [sys.executable, "-m", "webhook", "token-refresher", f"--credentials-dir={credentials}",
             f"--token-file={token_dir / 'token'}", f"--issuer={idp.issuer}", "--refresh-margin=2s",
             "--max-backoff=2s", f"--metrics-address=127.0.0.1:{port}", *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        started.append(Sidecar(process, token_dir / "token", port))
        return started[-1]

    yield run
    for sidecar in started:
        sidecar.stop()


def _access_token(content: str, idp) -> str:
    prefix, _, rest = content.partition(":")
    token, _, oauth_url = rest.partition(":")
    assert prefix == "oauth2"
    # EOS validates the token at the userinfo endpoint named without its scheme
    assert oauth_url == idp.issuer.removeprefix("http://") + "/me"
    return token


def test_refreshes_ahead_of_expiry_with_rotated_refresh_tokens(run_sidecar, idp):
    sidecar = run_sidecar()
    first = sidecar.wait_for(sidecar.token, 15, "no token file")
    assert sidecar.ready_file.exists() and sidecar.get("/readyz").status_code == 200
    info = os.stat(sidecar.token_file)
    assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.geteuid()
    assert idp.userinfo(_access_token(first, idp)).json() == {"sub": "jdoe"}
    # 6 s tokens, refreshed at half-life: two more tokens within ~10 s. The provider rotates refresh
    # tokens and revokes the grant when an old one is reused, so these prove the rotation is kept.
    second = sidecar.wait_for(lambda: (t := sidecar.token()) != first and t, 10, "no refresh before expiry")
    third = sidecar.wait_for(lambda: (t := sidecar.token()) not in (first, second) and t, 10, "no second refresh")
    assert idp.userinfo(_access_token(third, idp)).json() == {"sub": "jdoe"}
    assert sidecar.metric("quartermaster_token_refreshes_total", 'grant="refresh_token",result="success"') >= 3
    assert sidecar.metric("quartermaster_token_refreshes_total", 'grant="refresh_token",result="error"') == 0
    assert sidecar.metric("quartermaster_token_expiry_timestamp_seconds") > time.time()
    assert not list(sidecar.token_file.parent.glob(".token.tmp"))
    assert sidecar.stop() == 0
    assert not sidecar.ready_file.exists()


def test_token_exchange_writes_the_exchanged_token(run_sidecar, idp):
    sidecar = run_sidecar("--audience=eos")
    content = sidecar.wait_for(sidecar.token, 15, "no token file")
    token = _access_token(content, idp)
    assert idp.userinfo(token).json() == {"sub": "jdoe"}
    assert sidecar.metric("quartermaster_token_refreshes_total", 'grant="token_exchange",result="success"') == 1
    # the written token is the exchanged one, not the refreshed one: the provider says which grant made it
    introspected = requests.post(f"{idp.issuer}/token/introspection", auth=(idp.client_id, idp.client_secret),
                                 data={"token": token}, timeout=5).json()
    assert introspected["active"] is True and introspected["sub"] == "jdoe"
    assert introspected["exchanged_for"] == "eos"


def test_idp_outage_keeps_the_valid_token_then_readiness_drops_at_expiry(run_sidecar, idp):
    sidecar = run_sidecar()
    content = sidecar.wait_for(sidecar.token, 15, "no token file")
    expires_at = sidecar.metric("quartermaster_token_expiry_timestamp_seconds")
    idp.stop()  # the IdP goes away while the token still has seconds to live
    sidecar.wait_for(lambda: sidecar.metric("quartermaster_token_refreshes_total",
                                            'grant="refresh_token",result="error"') >= 1, 10, "no failed refresh")
    if time.time() < expires_at - 0.5:
        assert sidecar.get("/readyz").status_code == 200 and sidecar.ready_file.exists()
    assert sidecar.token() == content  # backoff never removes or corrupts the valid token
    sidecar.wait_for(lambda: sidecar.get("/readyz").status_code == 503, expires_at - time.time() + 5, "still ready after expiry")
    sidecar.wait_for(lambda: not sidecar.ready_file.exists(), 5, "ready file kept after expiry")
    assert sidecar.metric("quartermaster_token_refresh_consecutive_failures") >= 2


def test_refused_credentials_are_reported_and_never_ready(tmp_path, idp):
    from tests.refresher.oidc_idp import write_credentials
    credentials = write_credentials(tmp_path / "creds", idp, "not-a-refresh-token")
    proc = subprocess.Popen(
        [sys.executable, "-m", "webhook", "token-refresher", f"--credentials-dir={credentials}",
         f"--token-file={tmp_path / 'token'}", f"--issuer={idp.issuer}", "--metrics-address="],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(3)
        assert not (tmp_path / "token").exists() and not (tmp_path / ".ready").exists()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=10)
    assert "invalid_grant" in stderr and "log in again" in stderr
