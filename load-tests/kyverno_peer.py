"""Kyverno's admission controller out of cluster, against a control plane from `python -m tests.cluster up`.

Kyverno's own install manifest at the pinned release (`config/install-latest-testing.yaml` in its module)
is applied first (CRDs, namespace, ConfigMaps, RBAC, and its Deployments, whose pods the simulated nodes
report Running without running anything), then `kyverno --kubeconfig ... --serverIP 127.0.0.1:PORT` runs
here, generates its certificate into the namespace's Secrets as in a cluster, and registers its webhooks
by URL. The settings are the manifest's, except what an out-of-cluster process needs and what neither side does
here (generated ValidatingAdmissionPolicies, metrics, PolicyApplied events). Admission reports stay on, Kyverno's
default: each admitted request's results are written as an EphemeralReport after the answer, as Quartermaster
writes its PolicyReports after the answer.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import ssl
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAMESPACE = "kyverno"
CA_SECRET = "kyverno-svc.kyverno.svc.kyverno-tls-ca"
TLS_SECRET = "kyverno-svc.kyverno.svc.kyverno-tls-pair"
# Cluster-wide pieces of the manifest that would start work this process does not stand in for.
_SKIPPED_KINDS = {"CronJob", "Job", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}


def cpu_seconds(pid: int) -> float:
    """User + system CPU a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def binaries() -> Path:
    out = subprocess.run([str(HERE / "kyverno" / "build")], check=True, capture_output=True, text=True)
    return Path(out.stdout.strip().splitlines()[-1])


def module_dir() -> Path:
    out = subprocess.run(["go", "list", "-m", "-f", "{{.Dir}}", "github.com/kyverno/kyverno"],
                         cwd=HERE / "kyverno", check=True, capture_output=True, text=True)
    return Path(out.stdout.strip())


def install_manifest(kubectl: list[str], workdir: Path, excluded_label: tuple[str, str] | None = None) -> None:
    """Kyverno's install manifest, server-side applied (its CRDs are too large for the last-applied annotation).
    `excluded_label` (key, value): namespaces labelled so are also left out of every webhook Kyverno registers,
    through the namespaceSelector of its configuration (the `webhooks` key of ConfigMap kyverno/kyverno)."""
    import yaml

    docs = [d for d in yaml.safe_load_all((module_dir() / "config" / "install-latest-testing.yaml").read_text())
            if isinstance(d, dict) and d.get("kind") not in _SKIPPED_KINDS]
    if excluded_label is not None:
        [config] = [d for d in docs if d.get("kind") == "ConfigMap" and d["metadata"]["name"] == "kyverno"]
        webhooks = json.loads(config["data"]["webhooks"])
        selector = webhooks.setdefault("namespaceSelector", {})
        selector["matchExpressions"] = [*(selector.get("matchExpressions") or []),
                                        {"key": excluded_label[0], "operator": "NotIn", "values": [excluded_label[1]]}]
        config["data"]["webhooks"] = json.dumps(webhooks)
    path = workdir / "kyverno-install.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    subprocess.run([*kubectl, "apply", "--server-side", "--force-conflicts", "-f", str(path)],
                   check=True, capture_output=True, text=True, timeout=300)
    subprocess.run([*kubectl, "wait", "--for=condition=Established", "--timeout=120s", "crd", "--all"],
                   check=True, capture_output=True, text=True, timeout=180)


@dataclass
class KyvernoPeer:
    """A running admission controller: its port, its CA (read back from the Secret it wrote), its process."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path
    kubectl: list[str]
    ca: Path | None = None

    @property
    def base(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def wait_ready(self, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"kyverno exited {self.process.returncode}; log {self.log}:\n"
                                   + self.log.read_text()[-3000:])
            if self.ca is None:
                self.ca = self._read_ca()
            if self.ca is not None and self._ready():
                return
            time.sleep(0.5)
        raise RuntimeError(f"kyverno not ready in {timeout} s; log {self.log}")

    def _read_ca(self) -> Path | None:
        done = subprocess.run([*self.kubectl, "-n", NAMESPACE, "get", "secret", CA_SECRET, "-o", "json"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            return None
        path = self.log.with_name("kyverno-ca.crt")
        path.write_bytes(base64.b64decode(json.loads(done.stdout)["data"]["tls.crt"]))
        return path

    def _ready(self) -> bool:
        try:
            context = ssl.create_default_context(cafile=str(self.ca))
            with urllib.request.urlopen(f"{self.base}/health/readiness", context=context, timeout=2) as resp:
                return resp.status == 200
        except OSError:
            return False

    def webhook_paths(self, resource: str = "pods") -> list[str]:
        """The paths Kyverno registered for `resource` in its validating webhooks (read back from the API)."""
        done = subprocess.run([*self.kubectl, "get", "validatingwebhookconfigurations", "-o", "json"],
                              check=True, capture_output=True, text=True)
        paths = []
        for config in json.loads(done.stdout)["items"]:
            for hook in config.get("webhooks") or []:
                url = (hook.get("clientConfig") or {}).get("url") or ""
                rules = hook.get("rules") or []
                if url.startswith(self.base) and any(resource in r.get("resources", []) or "*" in r.get("resources", [])
                                                     for r in rules):
                    paths.append(url.removeprefix(self.base))
        return paths

    def stop(self) -> None:
        """Stops the process and removes the webhooks it registered (in a cluster, its Helm hook does that)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for kind in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
            subprocess.run([*self.kubectl, "delete", kind, "-l", "webhook.kyverno.io/managed-by=kyverno",
                            "--ignore-not-found", "--wait=false"], capture_output=True, text=True)


def start(binary: Path, kubeconfig: Path, kubectl: list[str], port: int, workdir: Path) -> KyvernoPeer:
    env = {**os.environ, "KYVERNO_NAMESPACE": NAMESPACE, "KYVERNO_POD_NAME": "kyverno-out-of-cluster",
           "KYVERNO_SERVICEACCOUNT_NAME": "kyverno-admission-controller",
           "KYVERNO_ROLE_NAME": "kyverno:admission-controller", "INIT_CONFIG": "kyverno",
           "METRICS_CONFIG": "kyverno-metrics", "KYVERNO_DEPLOYMENT": "kyverno-admission-controller",
           "KYVERNO_SVC": "kyverno-svc"}
    argv = [str(binary), f"--kubeconfig={kubeconfig}", f"--serverIP=127.0.0.1:{port}",
            "--webhookServerHost=127.0.0.1", f"--webhookServerPort={port}", f"--servicePort={port}",
            f"--caSecretName={CA_SECRET}", f"--tlsSecretName={TLS_SECRET}", "--tlsKeyAlgorithm=RSA",
            "--backgroundServiceAccountName=system:serviceaccount:kyverno:kyverno-background-controller",
            "--reportsServiceAccountName=system:serviceaccount:kyverno:kyverno-reports-controller",
            "--crdWatcher=false", "--disableMetrics=true", "--controllerRuntimeMetricsAddress=0",
            "--admissionReports=true", "--autoUpdateWebhooks=true", "--enableDeferredLoading=true",
            "--generateValidatingAdmissionPolicy=false", "--generateMutatingAdmissionPolicy=false",
            "--loggingFormat=text", "--v=1", "--omitEvents=PolicyApplied,PolicySkipped,PolicyViolation,PolicyError",
            "--enablePolicyException=false", "--protectManagedResources=false"]
    log = workdir / "kyverno.log"
    with open(log, "ab") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    return KyvernoPeer(process, port, log, kubectl)
