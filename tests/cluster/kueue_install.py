"""Kueue's controller manager against the test control plane, installed from Kueue's own manifests: its CRDs, its
RBAC (Kueue runs with its controller manager's ServiceAccount token, so Kueue's RBAC is what it gets) and its
webhook configurations, read from Kueue's Go module at the version tests/cluster/kueue/go.mod pins (in Go's module
cache, nothing of it copied here), with the name prefix, namespace and webhook namespace selector that Kueue's
kustomization (config/default) gives them.

What differs from Kueue's Deployment, and why:
- Kueue runs as a process on loopback, out of cluster (`--kubeconfig`), and the API server reaches its webhook
  server, and the CRDs' conversion webhook, by URL on loopback with the caBundle of a certificate the tests make:
  nothing routes cluster IPs here, and the certificate Kueue's internal certificate management makes names only the
  Service (`internalCertManagement.enable: false`, as with cert-manager).
- With its own certificate management off, Kueue reads a metrics certificate from the fixed path
  /etc/kueue/metrics/certs, where its Deployment mounts a Secret. The process gets that path as the container
  would: in a private mount namespace, over an overlay of /etc (the host's /etc is never written).
- Kueue's pod webhook has `reinvocationPolicy: IfNeeded`, as docs/kueue.md tells a platform engineer to set.
- One replica, leader election off; the visibility API (an aggregated API server) is off.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import re
import shutil
import signal
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from tests.cluster.control import ClusterRecord
from tests.cluster.kube import Kube, eventually
from tests.cluster.pki import kubeconfig_text
from tests.go_builds import cached_build
from tests.cluster.quartermaster import apply_crds, free_port
from webhook.certs.generate import ensure_certificates, service_names

HERE = Path(__file__).resolve().parent
MODULE = HERE / "kueue"
BUILD = MODULE / "build"
NAMESPACE = "kueue-system"
PREFIX = "kueue-"  # config/default/kustomization.yaml: namePrefix
SERVICE_ACCOUNT = PREFIX + "controller-manager"
CONFIG_API = "config.kueue.x-k8s.io/v1beta2"
API = "kueue.x-k8s.io/v1beta2"
POD_WEBHOOK = "mpod.kb.io"
METRICS_CERTS = "/etc/kueue/metrics/certs"

# Kueue's own process in a private mount namespace: an overlay on /etc (its upper layer on a tmpfs of the namespace)
# where /etc/kueue/metrics/certs is the tests' certificate directory; then Kueue itself, by exec (same process id)
_MOUNT_SCRIPT = """set -e
layer="$1"; certs="$2"; under_etc="$3"; shift 3
mount -t tmpfs tmpfs "$layer"
mkdir -p "$layer/upper/$(dirname "$under_etc")" "$layer/work"
ln -s "$certs" "$layer/upper/$under_etc"
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$layer/upper,workdir=$layer/work" /etc
exec "$@"
"""


class KueueError(RuntimeError):
    """Kueue is not built, or its module source cannot be found; the message says what to do."""


def binary() -> Path:
    """The built Kueue binary, or a KueueError that says how to build it."""
    return cached_build(BUILD, KueueError, "Kueue", "Go 1.26+; then cached by the hash of its go.mod and go.sum")


def module_source() -> Path:
    """Kueue's module source in Go's module cache (downloaded again if the cache was cleaned)."""
    if shutil.which("go") is None:
        raise KueueError("Go is not installed: Kueue's manifests are read from its Go module")
    result = subprocess.run(["go", "mod", "download", "-json", "sigs.k8s.io/kueue"], cwd=MODULE,
                            capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise KueueError(f"go mod download sigs.k8s.io/kueue failed: {result.stderr.strip() or result.stdout}")
    return Path(json.loads(result.stdout)["Dir"])


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _webhook_client(service: Mapping[str, Any], url: str, ca_bundle: str) -> dict[str, Any]:
    return {"url": url + service.get("path", "/"), "caBundle": ca_bundle}


def crds(source: Path, url: str, ca_bundle: str) -> list[dict[str, Any]]:
    """Kueue's CRDs, with the conversion webhook its kustomization patches in (config/components/crd)."""
    bases = source / "config/components/crd"
    kustomization = yaml.safe_load((bases / "kustomization.yaml").read_text())
    conversions = {}
    for patch in kustomization.get("patches", ()):
        for doc in _documents(bases / patch["path"]):
            conversion = copy.deepcopy(doc["spec"]["conversion"])
            webhook = conversion["webhook"]
            webhook["clientConfig"] = _webhook_client(webhook["clientConfig"]["service"], url, ca_bundle)
            conversions[doc["metadata"]["name"]] = conversion
    out = []
    for path in sorted((bases / "bases").glob("*.yaml")):
        for crd in _documents(path):
            if crd["metadata"]["name"] in conversions:
                crd["spec"]["conversion"] = conversions[crd["metadata"]["name"]]
            out.append(crd)
    return out


def rbac(source: Path) -> list[dict[str, Any]]:
    """Kueue's RBAC as its kustomization lists it (the controller manager's ServiceAccount, roles and bindings, the
    aggregated user roles), named and placed as config/default does."""
    components = source / "config/components/rbac"
    out = []
    for name in yaml.safe_load((components / "kustomization.yaml").read_text())["resources"]:
        for obj in _documents(components / name):
            obj["metadata"]["name"] = PREFIX + obj["metadata"]["name"]
            if "namespace" in obj["metadata"]:
                obj["metadata"]["namespace"] = NAMESPACE
            if "roleRef" in obj:
                obj["roleRef"]["name"] = PREFIX + obj["roleRef"]["name"]
            for subject in obj.get("subjects", ()):
                if subject["kind"] == "ServiceAccount":
                    subject.update(name=PREFIX + subject["name"], namespace=NAMESPACE)
            out.append(obj)
    return out


def webhook_configurations(source: Path, url: str, ca_bundle: str,
                           pod_reinvocation: str | None = "IfNeeded") -> list[dict[str, Any]]:
    """Kueue's webhook configurations as config/default renders them (name prefix, the namespace selector its
    kustomization gives the listed webhooks), each webhook reached by `url`; `pod_reinvocation` is the pod webhook's
    reinvocationPolicy (None: as Kueue's manifests leave it, which is Never)."""
    components = source / "config/components/webhook"
    kustomization = yaml.safe_load((components / "kustomization.yaml").read_text())
    [patch] = [yaml.safe_load(p["patch"]) for p in kustomization["patches"]]
    selector = patch["webhooks"][0]["namespaceSelector"]
    selected = {patch["webhooks"][0]["name"]}
    for replacement in kustomization.get("replacements", ()):
        for target in replacement["targets"]:
            selected |= {m.group(1) for p in target["fieldPaths"] for m in [re.search(r"\[name=([^\]]+)\]", p)] if m}
    out = []
    for config in _documents(components / "manifests.yaml"):
        config["metadata"]["name"] = PREFIX + config["metadata"]["name"]
        for webhook in config["webhooks"]:
            webhook["clientConfig"] = _webhook_client(webhook["clientConfig"]["service"], url, ca_bundle)
            if webhook["name"] in selected:
                webhook["namespaceSelector"] = copy.deepcopy(selector)
            if webhook["name"] == POD_WEBHOOK and pod_reinvocation:
                webhook["reinvocationPolicy"] = pod_reinvocation
        out.append(config)
    return out


def configuration(site: Mapping[str, Any], *, webhook_port: int, health_port: int, cert_dir: Path) -> dict[str, Any]:
    """Kueue's Configuration: the site's (integrations, managedJobsNamespaceSelector, resources...) over what running
    out of cluster here needs."""
    config: dict[str, Any] = {
        "apiVersion": CONFIG_API, "kind": "Configuration", "namespace": NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
    }
    config.update({k: copy.deepcopy(v) for k, v in site.items() if k not in ("apiVersion", "kind")})
    # the visibility API is an aggregated API server of its own, which nothing here asks
    config["featureGates"] = {"VisibilityOnDemand": False, **(site.get("featureGates") or {})}
    return config


@dataclass
class Kueue:
    """Kueue installed in the test cluster; `start` runs its controller manager with a Configuration and registers
    its webhooks, `stop` unregisters them and ends the process."""
    kube: Kube
    workdir: Path
    source: Path
    binary: Path
    cert_dir: Path
    kubeconfig: Path
    webhook_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    webhooks: list[dict[str, Any]] = field(default_factory=list)
    starts: int = 0
    running: str = ""  # the site Configuration it runs with

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.webhook_port}"

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode((self.cert_dir / "ca.crt").read_bytes()).decode()

    @property
    def log(self) -> Path:
        return self.workdir / "kueue.log"

    def start(self, site: Mapping[str, Any], pod_reinvocation: str | None = "IfNeeded") -> None:
        """Kueue running with the site's Configuration (restarted if it ran with another) and its webhooks
        registered, the pod webhook with `pod_reinvocation`."""
        wanted = json.dumps(site, sort_keys=True)
        if self.process is None or self.process.poll() is not None or wanted != self.running:
            self.stop()
            self._run(site)
            self.running = wanted
        self.webhooks = webhook_configurations(self.source, self.url, self.ca_bundle, pod_reinvocation)
        self.kube.apply_all(self.webhooks)

    def _run(self, site: Mapping[str, Any]) -> None:
        self.starts += 1
        health_port = free_port()
        config = configuration(site, webhook_port=self.webhook_port, health_port=health_port, cert_dir=self.cert_dir)
        config_path = self.workdir / f"config-{self.starts}.yaml"
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        layer = self.workdir / f"etc-layer-{self.starts}"
        layer.mkdir()
        unshare = ["unshare", "--mount", "--propagation", "private"]
        if os.geteuid() != 0:
            unshare[1:1] = ["--user", "--map-root-user"]
        argv = [*unshare, "sh", "-c", _MOUNT_SCRIPT, "kueue-mounts", str(layer), str(self.cert_dir),
                METRICS_CERTS.removeprefix("/etc/"), str(self.binary), f"--config={config_path}", f"--kubeconfig={self.kubeconfig}",
                "--zap-log-level=2"]
        with open(self.log, "ab") as out:
            out.write(f"--- start {self.starts}: {config_path}\n".encode())
            self.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        eventually(lambda: self._ready(health_port), 90, interval=0.5, message="Kueue /readyz")

    def assert_running(self) -> None:
        process = self.process
        assert process is not None, "Kueue is not started"
        if process.poll() is not None:
            raise AssertionError(f"Kueue exited {process.returncode}:\n{self.log.read_text()[-4000:]}")

    def _ready(self, port: int) -> bool:
        self.assert_running()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
                return answer.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def stop(self) -> None:
        for config in self.webhooks:
            self.kube.delete(config["apiVersion"], config["kind"], config["metadata"]["name"])
        self.webhooks = []
        self.running = ""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def install(kube: Kube, record: ClusterRecord, workdir: Path, kueue_binary: Path) -> Kueue:
    """Kueue's namespace, RBAC and CRDs (conversion by its webhook on loopback), a serving certificate for
    127.0.0.1, and a kubeconfig with the controller manager's ServiceAccount token."""
    workdir.mkdir(parents=True, exist_ok=True)
    source = module_source()
    cert_dir = workdir / "certs"
    ensure_certificates(cert_dir, service_names(PREFIX + "webhook-service", NAMESPACE))
    kueue = Kueue(kube, workdir, source, kueue_binary, cert_dir, workdir / "kueue.kubeconfig")
    if kube.get("v1", "Namespace", NAMESPACE) is None:
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    kube.apply_all(rbac(source))
    apply_crds(kube, crds(source, kueue.url, kueue.ca_bundle))
    token = kube.token_for(NAMESPACE, SERVICE_ACCOUNT)
    kueue.kubeconfig.write_text(kubeconfig_text(record.server, record.pki, user_name=SERVICE_ACCOUNT, token=token))
    kueue.kubeconfig.chmod(0o600)
    return kueue

