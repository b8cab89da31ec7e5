"""Start and stop the test control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the
simulated nodes, each a process of the qmcluster binary that tests/cluster/build made, on loopback ports.

`up` leaves in its directory: `admin.kubeconfig`, `cluster.json` (ports and process ids, read by `down`),
`pki/`, `logs/<component>.log` and `etcd/`."""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from tests.go_builds import cached_build
from tests.cluster.pki import ADMIN, CONTROLLER_MANAGER, NODES, SCHEDULER, ClusterPki, kubeconfig_text, write_pki

HERE = Path(__file__).resolve().parent
BUILD = HERE / "build"
# DRA is GA in 1.34; extended resources backed by DRA (KEP-5004) and MutatingAdmissionPolicy are not on by default
FEATURE_GATES = "DRAExtendedResource=true,MutatingAdmissionPolicy=true"
RUNTIME_CONFIG = "admissionregistration.k8s.io/v1beta1=true"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
READY_SECONDS = 120.0


@dataclass(frozen=True)
class SimulatedNode:
    """One node of the simulated pool, as the nodes component registers it."""
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    cpu: str = "32"
    memory: str = "256Gi"


# A mixed GPU pool as a Kubeflow platform has it; the tests publish each node's devices as ResourceSlices
DEFAULT_NODES = (
    SimulatedNode("cpu-0"),
    SimulatedNode("gpu-t4-0", {"quartermaster.dev/pool": "t4"}),
    SimulatedNode("gpu-a100-40-0", {"quartermaster.dev/pool": "a100-40"}),
    SimulatedNode("gpu-a100-80-0", {"quartermaster.dev/pool": "a100-80"}),
    SimulatedNode("gpu-h100-0", {"quartermaster.dev/pool": "h100"}),
    SimulatedNode("gpu-a100-mig-0", {"quartermaster.dev/pool": "a100-mig"}),
    SimulatedNode("gpu-h100-mig-0", {"quartermaster.dev/pool": "h100-mig"}),
)


class ControlPlaneError(RuntimeError):
    """The control plane could not be built, started or reached; the message says what to do."""


@dataclass(frozen=True)
class ClusterRecord:
    """What `up` writes to cluster.json for `down` and for tests."""
    directory: str
    server: str
    ports: dict[str, int]
    pids: dict[str, int]
    nodes: list[str]
    argv: dict[str, list[str]] = field(default_factory=dict)

    @property
    def admin_kubeconfig(self) -> Path:
        return Path(self.directory) / "admin.kubeconfig"

    @property
    def pki(self) -> ClusterPki:
        return ClusterPki(Path(self.directory) / "pki")

    @staticmethod
    def read(directory: Path) -> "ClusterRecord":
        return ClusterRecord(**json.loads((directory / "cluster.json").read_text()))


def binary() -> Path:
    """The built qmcluster binary, or a ControlPlaneError that says how to build it."""
    return cached_build(BUILD, ControlPlaneError, "the test control plane",
                        "Go 1.24+; cold about 15 minutes on 2 cores, then cached by the hash of go.sum")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start(name: str, argv: list[str], logs: Path) -> subprocess.Popen[bytes]:
    log = open(logs / f"{name}.log", "ab")
    try:
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    finally:
        log.close()


def _tls_context(pki: ClusterPki) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.ca_cert))
    context.load_cert_chain(str(pki.client_cert(ADMIN)), str(pki.client_key(ADMIN)))
    return context


def _get(url: str, context: ssl.SSLContext) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, context=context, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except (urllib.error.URLError, OSError):
        return 0, b""


def _wait(what: str, check: Callable[[], bool], deadline: float, processes: dict[str, subprocess.Popen[bytes]],
          logs: Path) -> None:
    while not check():
        for name, process in processes.items():
            if process.poll() is not None:
                tail = (logs / f"{name}.log").read_text(errors="replace")[-3000:]
                raise ControlPlaneError(f"{name} exited with {process.returncode} while waiting for {what}:\n{tail}")
        if time.monotonic() > deadline:
            raise ControlPlaneError(f"timed out waiting for {what} (logs in {logs})")
        time.sleep(0.2)


def _nodes_ready(server: str, context: ssl.SSLContext, names: list[str]) -> bool:
    status, body = _get(f"{server}/api/v1/nodes", context)
    if status != 200:
        return False
    ready = {n["metadata"]["name"] for n in json.loads(body)["items"]
             if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))
             and not any(t["key"].startswith("node.kubernetes.io/") for t in n["spec"].get("taints", []))}
    return set(names) <= ready


def up(directory: Path, nodes: tuple[SimulatedNode, ...] = DEFAULT_NODES,
       ready_seconds: float = READY_SECONDS) -> ClusterRecord:
    """Start the control plane in `directory` and return once every component is ready."""
    directory = directory.resolve()
    if (directory / "cluster.json").exists():
        raise ControlPlaneError(f"{directory} already holds a control plane: `python -m tests.cluster down {directory}`")
    qmcluster = str(binary())
    directory.mkdir(parents=True, exist_ok=True)
    logs = directory / "logs"
    logs.mkdir(exist_ok=True)
    pki = write_pki(directory / "pki")
    ports = {name: _free_port() for name in ("etcd", "etcd-peer", "apiserver", "controller-manager", "scheduler")}
    server = f"https://127.0.0.1:{ports['apiserver']}"
    for who, file_name in ((ADMIN, "admin.kubeconfig"), (CONTROLLER_MANAGER, "controller-manager.kubeconfig"),
                           (SCHEDULER, "scheduler.kubeconfig"), (NODES, "nodes.kubeconfig")):
        (directory / file_name).write_text(kubeconfig_text(server, pki, user_name=who.user, client=who))
        (directory / file_name).chmod(0o600)
    (directory / "nodes.json").write_text(json.dumps([
        {"name": n.name, "labels": n.labels, "cpu": n.cpu, "memory": n.memory} for n in nodes]))

    processes: dict[str, subprocess.Popen[bytes]] = {}
    record = ClusterRecord(str(directory), server, ports, {}, [n.name for n in nodes])
    try:
        deadline = time.monotonic() + ready_seconds
        processes["etcd"] = _start("etcd", [qmcluster, "etcd", f"--data-dir={directory / 'etcd'}",
                                            f"--listen-client=http://127.0.0.1:{ports['etcd']}",
                                            f"--listen-peer=http://127.0.0.1:{ports['etcd-peer']}"], logs)
        processes["kube-apiserver"] = _start("kube-apiserver", [
            qmcluster, "kube-apiserver",
            f"--etcd-servers=http://127.0.0.1:{ports['etcd']}",
            "--bind-address=127.0.0.1", f"--secure-port={ports['apiserver']}", "--advertise-address=127.0.0.1",
            # the loopback address may not be written into the kubernetes Service's endpoints: nothing dials it here
            "--endpoint-reconciler-type=none",
            f"--tls-cert-file={pki.serving_cert}", f"--tls-private-key-file={pki.serving_key}",
            f"--client-ca-file={pki.ca_cert}",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}", f"--api-audiences={SERVICE_ACCOUNT_ISSUER}",
            f"--service-account-key-file={pki.sa_pub}", f"--service-account-signing-key-file={pki.sa_key}",
            "--service-cluster-ip-range=10.96.0.0/16",
            "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
            "--allow-privileged=true", "--profiling=false",
            f"--feature-gates={FEATURE_GATES}", f"--runtime-config={RUNTIME_CONFIG}",
            f"--cert-dir={directory / 'apiserver-certs'}",
        ], logs)
        context = _tls_context(pki)
        _wait("kube-apiserver /readyz", lambda: _get(f"{server}/readyz", context)[0] == 200, deadline, processes, logs)
        processes["kube-controller-manager"] = _start("kube-controller-manager", [
            qmcluster, "kube-controller-manager",
            f"--kubeconfig={directory / 'controller-manager.kubeconfig'}",
            f"--authentication-kubeconfig={directory / 'controller-manager.kubeconfig'}",
            f"--authorization-kubeconfig={directory / 'controller-manager.kubeconfig'}",
            "--bind-address=127.0.0.1", f"--secure-port={ports['controller-manager']}",
            f"--service-account-private-key-file={pki.sa_key}", f"--root-ca-file={pki.ca_cert}",
            f"--cluster-signing-cert-file={pki.ca_cert}", f"--cluster-signing-key-file={pki.ca_key}",
            "--use-service-account-credentials=true", "--leader-elect=false", "--profiling=false",
            f"--feature-gates={FEATURE_GATES}",
        ], logs)
        processes["kube-scheduler"] = _start("kube-scheduler", [
            qmcluster, "kube-scheduler",
            f"--kubeconfig={directory / 'scheduler.kubeconfig'}",
            f"--authentication-kubeconfig={directory / 'scheduler.kubeconfig'}",
            f"--authorization-kubeconfig={directory / 'scheduler.kubeconfig'}",
            "--bind-address=127.0.0.1", f"--secure-port={ports['scheduler']}",
            "--leader-elect=false", "--profiling=false", f"--feature-gates={FEATURE_GATES}",
        ], logs)
        processes["nodes"] = _start("nodes", [qmcluster, "nodes", f"--kubeconfig={directory / 'nodes.kubeconfig'}",
                                              f"--config={directory / 'nodes.json'}"], logs)
        record = ClusterRecord(str(directory), server, ports, {n: p.pid for n, p in processes.items()},
                               [n.name for n in nodes], {n: list(p.args) for n, p in processes.items()})
        _write_record(record)
        insecure = ssl.create_default_context()
        insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
        for component in ("controller-manager", "scheduler"):
            url = f"https://127.0.0.1:{ports[component]}/healthz"
            _wait(f"kube-{component} /healthz", lambda url=url: _get(url, insecure)[0] == 200, deadline, processes, logs)
        _wait("the default ServiceAccount (controller manager's controllers running)",
              lambda: _get(f"{server}/api/v1/namespaces/default/serviceaccounts/default", context)[0] == 200,
              deadline, processes, logs)
        _wait("simulated nodes Ready", lambda: _nodes_ready(server, context, record.nodes), deadline, processes, logs)
    except BaseException:
        for process in reversed(list(processes.values())):
            _stop_pid(process.pid)
        (directory / "cluster.json").unlink(missing_ok=True)
        raise
    return record


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        # a zombie (exited, not yet reaped by a parent that is still ours) is gone for our purpose
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _stop_pid(pid: int, grace: float = 10.0) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while _alive(pid) and time.monotonic() < deadline:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.05)
        if not _alive(pid):
            return


def _write_record(record: ClusterRecord) -> None:
    (Path(record.directory) / "cluster.json").write_text(json.dumps(asdict(record), indent=2))


def stop_component(record: ClusterRecord, name: str) -> None:
    """Stop one component (a controller manager outage, say); `start_component` brings it back."""
    _stop_pid(record.pids[name])


def restart_component(record: ClusterRecord, name: str) -> ClusterRecord:
    """Stop one component and start it again with the same arguments (an API server restart, say)."""
    stop_component(record, name)
    return start_component(record, name)


def start_component(record: ClusterRecord, name: str) -> ClusterRecord:
    """Start a stopped component again with the arguments `up` gave it; returns once it is ready."""
    logs = Path(record.directory) / "logs"
    process = _start(name, record.argv[name], logs)
    updated = ClusterRecord(record.directory, record.server, record.ports, {**record.pids, name: process.pid},
                            record.nodes, record.argv)
    _write_record(updated)
    if name == "kube-apiserver":
        context = _tls_context(record.pki)
        _wait("kube-apiserver /readyz after a restart",
              lambda: _get(f"{record.server}/readyz", context)[0] == 200,
              time.monotonic() + READY_SECONDS, {name: process}, logs)
    component = name.removeprefix("kube-")
    if component in ("controller-manager", "scheduler"):
        insecure = ssl.create_default_context()
        insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
        url = f"https://127.0.0.1:{record.ports[component]}/healthz"
        _wait(f"{name} /healthz after a restart", lambda: _get(url, insecure)[0] == 200,
              time.monotonic() + READY_SECONDS, {name: process}, logs)
    return updated


def down(directory: Path) -> None:
    """Stop every component that `up` started in `directory` (etcd last)."""
    directory = directory.resolve()
    path = directory / "cluster.json"
    if not path.exists():
        raise ControlPlaneError(f"no control plane recorded in {directory}")
    record = ClusterRecord.read(directory)
    for name in reversed(list(record.pids)):
        _stop_pid(record.pids[name])
    path.unlink()
