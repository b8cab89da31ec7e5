"""A real OpenID Connect provider for the token refresher's tests: panva's certified `oidc-provider`
on the machine's Node.js, installed from the npm registry (pinned by idp/package-lock.json) into a
cache directory, started on loopback per test.

`python -m tests.refresher.oidc_idp` installs it ahead of the tests (.ci/run does).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import requests

from tests.support import free_port

SOURCE = Path(__file__).with_name("idp")
REDIRECT_URI = "http://127.0.0.1/callback"


def cache_dir() -> Path:
    lock = (SOURCE / "package-lock.json").read_bytes()
    root = Path(os.environ.get("QUARTERMASTER_TEST_CACHE", Path.home() / ".cache" / "quartermaster-tests"))
    return root / f"oidc-provider-{hashlib.sha256(lock).hexdigest()[:12]}"


def install() -> Path:
    """npm ci into the cache once; later calls only refresh the server script."""
    target = cache_dir()
    if not (target / "node_modules" / "oidc-provider" / "package.json").is_file():
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("the token refresher tests need Node.js and npm (Debian: apt-get install nodejs npm)")
        target.mkdir(parents=True, exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy(SOURCE / name, target / name)
        proc = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=target,
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"npm ci of oidc-provider in {target} failed:\n{proc.stdout}{proc.stderr}")
    shutil.copy(SOURCE / "server.mjs", target / "server.mjs")
    return target


@dataclass
class RunningIdp:
    issuer: str
    client_id: str
    client_secret: str
    process: subprocess.Popen

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def userinfo(self, access_token: str) -> requests.Response:
        return requests.get(f"{self.issuer}/me", headers={"Authorization": f"Bearer {access_token}"}, timeout=5)


def start(access_token_ttl: int) -> RunningIdp:
    directory = install()
    node = shutil.which("node") or "node"
    process = subprocess.Popen([node, "server.mjs", str(free_port()), str(access_token_ttl)], cwd=directory,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()  # printed once it listens
    if not line:
        process.wait(timeout=5)
        raise RuntimeError(f"oidc-provider did not start:\n{process.stderr.read()}")
    info = json.loads(line)
    return RunningIdp(issuer=info["issuer"], client_id=info["client_id"], client_secret=info["client_secret"], process=process)


def log_in(idp: RunningIdp, user: str) -> dict:
    """The authorization-code flow through the provider's own login and consent pages, as a browser
    would do it (Kubeflow's login does this for real users); returns the token response with the
    refresh token the refresher starts from."""
    browser = requests.Session()
    response = browser.get(f"{idp.issuer}/auth", allow_redirects=False, timeout=5, params={
        "client_id": idp.client_id, "response_type": "code", "scope": "openid offline_access",
        "redirect_uri": REDIRECT_URI, "prompt": "consent", "state": "notebook-login-state"})
    for form in ({"prompt": "login", "login": user, "password": "unused"}, {"prompt": "consent"}):
        page = _follow(browser, idp.issuer, response.headers["location"])
        response = browser.post(page, data=form, allow_redirects=False, timeout=5)
    callback = _follow(browser, idp.issuer, response.headers["location"])
    code = urllib.parse.parse_qs(urllib.parse.urlsplit(callback).query)["code"][0]
    tokens = requests.post(f"{idp.issuer}/token", auth=(idp.client_id, idp.client_secret), timeout=5, data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI})
    tokens.raise_for_status()
    return tokens.json()


def _follow(browser: requests.Session, issuer: str, location: str) -> str:
    """Follow redirects to the next page (an interaction form) or to the client's callback."""
    while True:
        url = urllib.parse.urljoin(issuer, location)
        if url.startswith(REDIRECT_URI):
            return url
        response = browser.get(url, allow_redirects=False, timeout=5)
        if response.status_code not in (302, 303):
            response.raise_for_status()
            return url
        location = response.headers["location"]


def write_credentials(directory: Path, idp: RunningIdp, refresh_token: str) -> Path:
    """The Secret `oidc-<user>` as the kubelet mounts it: one file per key."""
    directory.mkdir(parents=True, exist_ok=True)
    for key, value in (("client_id", idp.client_id), ("client_secret", idp.client_secret), ("refresh_token", refresh_token)):
        (directory / key).write_text(value)
    return directory


if __name__ == "__main__":
    print(f"oidc-provider installed in {install()}")
