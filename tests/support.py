"""Test helpers shared by every suite: AdmissionReview builders, a real HTTPS server, the checks every
emitted object must pass (kubernetes-validate strict 1.34, JSON Patch applied with the jsonpatch library)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import functools
import importlib
import importlib.util
import json
import pickle
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator, Mapping

import aiohttp
import jsonpatch
import kubernetes_validate
import yaml

K8S_VERSION = "1.34.0"
# who creates a notebook's pods in a real cluster: kube-controller-manager's StatefulSet controller (the
# only requester whose pods NotebookInjection gives an identity)
STATEFULSET_CONTROLLER = "system:serviceaccount:kube-system:statefulset-controller"
REPO = Path(__file__).resolve().parent.parent


def assert_valid_k8s(obj: Mapping[str, Any]) -> None:
    """Strict schema validation against Kubernetes 1.34 (unknown fields are errors)."""
    kubernetes_validate.validate(json.loads(json.dumps(obj)), K8S_VERSION, strict=True)


def apply_patch(original: Mapping[str, Any], patch_ops: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Apply as the API server would: a real RFC 6902 implementation on the original object."""
    return jsonpatch.JsonPatch([dict(op) for op in patch_ops]).apply(copy.deepcopy(dict(original)))


def review(obj: Mapping[str, Any] | None, operation: str = "CREATE", namespace: str | None = None,
           old: Mapping[str, Any] | None = None, dry_run: bool = False, uid: str | None = None,
           username: str = "jdoe@example.org") -> dict[str, Any]:
    """An AdmissionReview as kube-apiserver sends it."""
    subject = obj if obj is not None else (old or {})
    api_version = subject.get("apiVersion", "v1")
    group, _, version = api_version.rpartition("/")
    kind = subject.get("kind", "Pod")
    meta = subject.get("metadata") or {}
    ns = namespace if namespace is not None else meta.get("namespace", "")
    plural = {"PersistentVolumeClaim": "persistentvolumeclaims", "ResourceClaim": "resourceclaims",
              "ResourceClaimTemplate": "resourceclaimtemplates", "Namespace": "namespaces"}.get(kind, kind.lower() + "s")
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid or str(uuid.uuid4()),
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": plural},
            "requestKind": {"group": group, "version": version, "kind": kind},
            "requestResource": {"group": group, "version": version, "resource": plural},
            "name": meta.get("name", ""),
            "namespace": ns,
            "operation": operation,
            "userInfo": {"username": username, "groups": ["system:authenticated"]},
            "object": obj,
            "oldObject": old,
            "dryRun": dry_run,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": f"{operation.title()}Options"},
        },
    }


def decode_patch(response: Mapping[str, Any]) -> list[dict[str, Any]]:
    if "patch" not in response:
        return []
    assert response["patchType"] == "JSONPatch"
    return json.loads(base64.b64decode(response["patch"]))


def load_yaml(path: Path) -> list[Any]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


@functools.cache
def _parsed_once(path: Path) -> bytes:
    return pickle.dumps(list(yaml.safe_load_all(path.read_text())))


def shared_yaml(path: Path) -> list[Any]:
    """yaml.safe_load_all of a file that several tests read (the conformance corpus: ~12 s of pure-Python YAML a
    pass), parsed once per test run; each call gets its own copy, so no test sees another's changes. A file that
    does not parse raises yaml.YAMLError every time."""
    return pickle.loads(_parsed_once(path))


def case_state(case: Path) -> Any:
    """A declarative case's cluster: the namespaces and profiles of examples/state, plus its state.yaml."""
    from webhook.state.memory import InMemoryClusterState

    seed = InMemoryClusterState.from_directory(REPO / "examples" / "state")
    extra = load_yaml(case / "state.yaml") if (case / "state.yaml").exists() else []
    return InMemoryClusterState([*(o for k in ("Namespace", "Profile") for o in seed.list(k)), *extra])


def load_tests_module(name: str) -> Any:
    """A module of load-tests/ (the benchmarks are scripts, not a package): imported with that directory on the
    path only while it loads, so its own imports (drivers, workload) resolve."""
    directory = str(REPO / "load-tests")
    sys.path.insert(0, directory)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(directory)


def source_module(name: str) -> Any:
    """A fresh module made from the .py source of webhook module `name`, whether or not that module runs compiled
    (webhook/compiled.py): a test can patch its functions, which a compiled module would not see, and compare."""
    source = REPO / Path(*name.split(".")).with_suffix(".py")
    spec = importlib.util.spec_from_file_location(f"{name}__source", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


async def raw_http(reader: Any, writer: Any, method: str, path: str, body: bytes = b"", keep_alive: bool = True) -> tuple[int, bytes]:
    """One HTTP/1.1 request on an asyncio stream pair the test controls (to pin a connection or a handshake)."""
    head = (f"{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            f"Connection: {'keep-alive' if keep_alive else 'close'}\r\nContent-Length: {len(body)}\r\n\r\n")
    writer.write(head.encode() + body)
    await writer.drain()
    status, _, answer = await read_response(reader)
    return status, answer


async def read_response(reader: Any) -> tuple[int, dict[str, str], bytes]:
    """One final HTTP/1.1 response (a 100 Continue before it is skipped): status, headers by lower-case name, body.
    A connection closed before it fails on the status line (IndexError), as a TLS refusal on the first read does."""
    while True:
        status = int((await reader.readline()).split()[1])
        headers = {}
        while (field := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = field.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if status >= 200:
            return status, headers, await reader.readexactly(int(headers.get("content-length", "0")))


def port_of(server: "RunningServer") -> int:
    return int(server.url.rsplit(":", 1)[1])


async def connect(server: "RunningServer", context: ssl.SSLContext | None = None) -> tuple[Any, Any]:
    """A TLS connection to the running server the test drives byte by byte (its CA trusted unless `context`)."""
    return await asyncio.open_connection("127.0.0.1", port_of(server), ssl=context or server.client_ssl(),
                                         server_hostname="localhost")


async def eventually(check: Any, timeout: float = 10.0, message: str = "condition not reached") -> Any:
    """Poll `check` (plain or async) until it returns something truthy; fail the test after `timeout`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        assert loop.time() < deadline, message
        await asyncio.sleep(0.02)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class RunningServer:
    url: str
    ca: Path
    cert_dir: Path
    qm: Any
    session: aiohttp.ClientSession

    def client_ssl(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca))

    async def post(self, path: str, body: Any, raw: bytes | None = None, query: str = "") -> tuple[int, Any]:
        data = raw if raw is not None else json.dumps(body).encode()
        async with self.session.post(f"{self.url}{path}{query}", data=data,
                                     headers={"Content-Type": "application/json"}) as resp:
            text = await resp.text()
            try:
                return resp.status, json.loads(text)
            except ValueError:
                return resp.status, text

    async def admit(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST a review, check the response envelope the API server checks, return `response`."""
        status, answer = await self.post(path, body)
        assert status == 200, answer
        assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
        response = answer["response"]
        assert response["uid"] == body["request"]["uid"]
        assert isinstance(response["allowed"], bool)
        assert ("patchType" in response) == ("patch" in response)
        if not response["allowed"]:
            assert 400 <= response["status"]["code"] < 600 and response["status"]["message"]
        return response

    async def get(self, path: str) -> tuple[int, str]:
        async with self.session.get(f"{self.url}{path}") as resp:
            return resp.status, await resp.text()


@contextlib.asynccontextmanager
async def running_server(policies: Path, tmp_path: Path, state: Path | None = None,
                         qm_state: Any = None, registry: Any = None, sink: Any = None,
                         **settings: Any) -> AsyncIterator[RunningServer]:
    """The real server (aiohttp, real TLS with generated certificates) on a free loopback port.

    `registry`: a FamilyRegistry, or a function of the process's ReservationLedgers that builds one. `sink`: where
    rule results go (a MemoryResultSink to read them; standalone `serve` keeps none)."""
    from webhook.app import Quartermaster, Settings
    from webhook.state.ledger import ReservationLedgers

    ledgers = ReservationLedgers()
    if callable(registry):
        registry = registry(ledgers)

    cert_dir = tmp_path / "certs"
    port = free_port()
    qm = Quartermaster.build(Settings(policies=policies, state=state, cert_dir=cert_dir, host="127.0.0.1", port=port,
                                      policy_poll_seconds=settings.pop("policy_poll_seconds", 0.2),
                                      cert_poll_seconds=settings.pop("cert_poll_seconds", 0.2), **settings), state=qm_state,
                            registry=registry, ledgers=ledgers, sink=sink)
    ready, stop = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(qm.serve(ready=ready, stop=stop))
    waiter = asyncio.create_task(ready.wait())
    done, _ = await asyncio.wait({task, waiter}, timeout=20, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        waiter.cancel()
        task.result()  # raises the startup error
    ctx = ssl.create_default_context(cafile=str(cert_dir / "ca.crt"))
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=200))
    try:
        yield RunningServer(f"https://127.0.0.1:{port}", cert_dir / "ca.crt", cert_dir, qm, session)
    finally:
        await session.close()
        stop.set()
        await asyncio.wait_for(task, 15)


def pid(name: str, kind: str = "ProfileQuota", namespace: str = ""):
    """A policy identity for results built by hand (reports, writers)."""
    from webhook.model.results import PolicyId

    return PolicyId("quartermaster.dev/v1alpha1", kind, name, namespace)


def https(url: str, ca: Path, body: bytes | None = None) -> tuple[int, bytes]:
    """One blocking HTTPS request trusting only `ca` (a POST with a JSON body when `body` is given)."""
    ctx = ssl.create_default_context(cafile=str(ca))
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=5) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def wait_until_ready(proc: subprocess.Popen, base: str, ca: Path, timeout: float = 30) -> None:
    """Poll `base`/readyz of a `serve` subprocess until it answers 200; fail with its stderr if it exits."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if ca.exists() and https(f"{base}/readyz", ca)[0] == 200:
                return
        except (OSError, ssl.SSLError):
            pass
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "server exited"
        assert time.monotonic() < deadline, "server did not become ready"
        time.sleep(0.2)


def policy_dir(directory: Path, files: Mapping[str, str]) -> Path:
    """A fresh policy directory holding these files (name -> YAML text), as `serve --policies` reads it."""
    directory.mkdir()
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386, as the API server applies a merge patch: maps merge, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result
