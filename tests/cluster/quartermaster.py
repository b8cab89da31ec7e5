"""Quartermaster installed into the test control plane as the chart installs it, with its replicas as processes on
loopback: the chart's CRDs, ServiceAccount and RBAC applied as rendered (by a real Helm engine), `quartermaster serve
--kubeconfig` running with that ServiceAccount's token, and the chart's own webhook configurations registered with
the caBundle of the serving certificate. The one change to what the chart renders: the API server reaches the
replicas by URL on loopback instead of through the Service (nothing routes cluster IPs here)."""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from tests.chart.support import render
from tests.cluster.control import ClusterRecord
from tests.cluster.kube import Kube, eventually
from tests.cluster.pki import kubeconfig_text
from tests.support import REPO
from webhook.certs.generate import ensure_certificates, service_names

NAMESPACE = RELEASE = "quartermaster"
SERVICE_ACCOUNT = "quartermaster"
WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
IDENTITY_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# the values a platform engineer sets (docs/deploy.md): the image they built, their IdP; and what the tests'
# policies generate, beside the chart's default (the DRA rewrite's claim templates)
CLUSTER_VALUES = {
    "image": {"repository": "registry.example.org/platform/quartermaster", "tag": "0.1.0-e2e"},
    "notebook": {"issuer": "https://auth.example.org/realms/platform"},
    "live": {"generateKinds": [{"apiGroup": "resource.k8s.io", "resources": ["resourceclaimtemplates"]},
                               {"apiGroup": "", "resources": ["configmaps"]}]},
}


def chart_values(ca_bundle: str, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    values: dict[str, Any] = {
        "clusterState": "live",
        "certificates": {"mode": "external", "external": {"secretName": "quartermaster-tls", "caBundle": ca_bundle}},
        "policyReports": {"installCRDs": True},
    }
    for key, value in (extra or {}).items():
        values[key] = value
    return values


def registrations(rendered_objects: tuple[dict[str, Any], ...], url: str) -> list[dict[str, Any]]:
    """The chart's webhook configurations, each webhook's Service reference replaced by the same path on `url`."""
    out = []
    for obj in rendered_objects:
        if obj["kind"] not in WEBHOOK_KINDS:
            continue
        obj = {**obj, "webhooks": [dict(w) for w in obj["webhooks"]]}
        for webhook in obj["webhooks"]:
            config = dict(webhook["clientConfig"])
            service = config.pop("service")
            config["url"] = url + service.get("path", "/")
            webhook["clientConfig"] = config
        out.append(obj)
    return out


@dataclass
class Replica:
    name: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@dataclass
class Installation:
    """Quartermaster in the test cluster: its replicas, the front that spreads connections, its registrations."""
    kube: Kube
    workdir: Path
    cert_dir: Path
    kubeconfig: Path
    policies: Path
    url: str = ""
    replicas: list[Replica] = field(default_factory=list)
    front: subprocess.Popen[bytes] | None = None
    webhooks: list[dict[str, Any]] = field(default_factory=list)
    values: Mapping[str, Any] = field(default_factory=dict)  # the site's chart values it was installed with

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode((self.cert_dir / "ca.crt").read_bytes()).decode()

    def start_replica(self, name: str, *extra: str) -> Replica:
        port = free_port()
        log = self.workdir / f"{name}.log"
        env = {**os.environ, "POD_NAME": name, "POD_NAMESPACE": NAMESPACE}
        with open(log, "ab") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "webhook", "serve", f"--kubeconfig={self.kubeconfig}",
                 f"--policies={self.policies}", f"--cert-dir={self.cert_dir}", f"--port={port}",
                 f"--namespace={NAMESPACE}", "--scan-interval=0", *extra],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=REPO)
        replica = Replica(name, port, process, log)
        self.replicas.append(replica)
        context = ssl.create_default_context(cafile=str(self.cert_dir / "ca.crt"))

        def ready() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"replica {name} exited {process.returncode}:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=context, timeout=2) as r:
                    return r.status == 200
            except (urllib.error.URLError, OSError):
                return False
        eventually(ready, 60, message=f"replica {name} ready")
        return replica

    def readiness(self) -> list[dict[str, Any]]:
        """Each replica's /readyz body (its policies, their routes, the state's sync)."""
        context = ssl.create_default_context(cafile=str(self.cert_dir / "ca.crt"))
        bodies = []
        for replica in self.replicas:
            try:
                with urllib.request.urlopen(f"https://127.0.0.1:{replica.port}/readyz", context=context, timeout=5) as r:
                    bodies.append(json.loads(r.read()))
            except urllib.error.HTTPError as error:  # 503: not ready, and its body says why
                bodies.append(json.loads(error.read()))
        return bodies

    def knows_namespace(self, namespace: str) -> bool:
        """Every replica has the namespace in its cluster state: a dry-run GPU pod there, reviewed by each replica
        directly, is not refused for want of it (a dry run reserves nothing)."""
        from tests.cluster.workloads import pod
        from tests.support import review

        context = ssl.create_default_context(cafile=str(self.cert_dir / "ca.crt"))
        body = json.dumps(review(pod("probe", namespace, limits={"nvidia.com/gpu": "1"}), dry_run=True)).encode()
        for replica in self.replicas:
            request = urllib.request.Request(f"https://127.0.0.1:{replica.port}/validate", data=body,
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, context=context, timeout=5) as answer:
                if "does not know namespace" in answer.read().decode():
                    return False
        return True

    def policy_counts(self) -> list[int]:
        """How many policies each replica serves."""
        return [sum(body.get("policyRoutes", {}).values()) for body in self.readiness()]

    def start_front(self, port: int | None = None) -> None:
        port = port or free_port()
        backends = [f"--backend=127.0.0.1:{r.port}" for r in self.replicas]
        self.front = subprocess.Popen([sys.executable, "-m", "tests.cluster.roundrobin", f"--listen={port}", *backends],
                                      cwd=REPO, stdin=subprocess.DEVNULL)
        self.url = f"https://127.0.0.1:{port}"

        def listening() -> bool:
            with socket.socket() as sock:
                return sock.connect_ex(("127.0.0.1", port)) == 0
        eventually(listening, 20, message="round-robin front listening")

    def register(self, values: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """The chart's webhook configurations, rendered with `values` (default: those it was installed with)."""
        rendered = render(chart_values(self.ca_bundle, self.values if values is None else values),
                          namespace=NAMESPACE, release=RELEASE)
        self.webhooks = registrations(rendered.objects, self.url)
        self.kube.apply_all(self.webhooks)
        return self.webhooks

    def unregister(self) -> None:
        for config in self.webhooks:
            self.kube.delete(config["apiVersion"], config["kind"], config["metadata"]["name"])

    def stop(self) -> None:
        self.unregister()
        for replica in self.replicas:
            replica.stop()
        self.replicas.clear()
        if self.front is not None and self.front.poll() is None:
            self.front.terminate()
            self.front.wait(10)


def chart_policies(directory: Path, values: Mapping[str, Any] | None = None) -> Path:
    """The policy files of the chart's policies ConfigMap, rendered with `values`, as the Deployment mounts them."""
    directory.mkdir(parents=True, exist_ok=True)
    config_map = render(dict(values or {}), namespace=NAMESPACE, release=RELEASE).one("ConfigMap")
    for name, text in config_map["data"].items():
        (directory / name).write_text(text)
    return directory


def install(kube: Kube, record: ClusterRecord, workdir: Path, policies: Path | None = None,
            values: Mapping[str, Any] | None = None) -> Installation:
    """The chart's CRDs, ServiceAccount and RBAC and its policies ConfigMap (unless `policies` names another
    directory), rendered with `values` (the site's, docs/deploy.md), and a kubeconfig with that ServiceAccount's
    token."""
    workdir.mkdir(parents=True, exist_ok=True)
    cert_dir = workdir / "certs"
    ensure_certificates(cert_dir, service_names(RELEASE, NAMESPACE))
    ca_bundle = base64.b64encode((cert_dir / "ca.crt").read_bytes()).decode()
    if kube.get("v1", "Namespace", NAMESPACE) is None:
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    rendered = render(chart_values(ca_bundle, values), namespace=NAMESPACE, release=RELEASE)
    apply_crds(kube, [o for o in rendered.objects if o["kind"] == "CustomResourceDefinition"])
    kube.apply_all([o for o in rendered.objects if o["kind"] in IDENTITY_KINDS])
    token = kube.token_for(NAMESPACE, SERVICE_ACCOUNT)
    kubeconfig = workdir / "quartermaster.kubeconfig"
    kubeconfig.write_text(kubeconfig_text(record.server, record.pki, user_name="quartermaster", token=token))
    kubeconfig.chmod(0o600)
    if policies is None:
        policies = chart_policies(workdir / "policies", values)
    return Installation(kube, workdir, cert_dir, kubeconfig, policies, values=dict(values or {}))


def apply_crds(kube: Kube, crds: list[dict[str, Any]]) -> None:
    """Apply the CRDs and return once each is established and the dynamic client's discovery knows its kinds."""
    kube.apply_all(crds)
    for crd in crds:
        eventually(lambda crd=crd: crd_established(kube, crd["metadata"]["name"]), 30,
                   message=f"CRD {crd['metadata']['name']} established")
    kube.dynamic.resources.invalidate_cache()  # its discovery cache predates the CRDs


def crd_established(kube: Kube, name: str) -> bool:
    crd = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
    return bool(crd) and any(c["type"] == "Established" and c["status"] == "True"
                             for c in (crd.get("status") or {}).get("conditions") or [])
