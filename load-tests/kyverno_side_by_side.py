#!/usr/bin/env python3
"""Quartermaster and Kyverno side by side, on the same control plane and the same policies, in one run.

    load-tests/kyverno/build && tests/cluster/build            # once: both binaries
    python load-tests/kyverno_side_by_side.py                  # both policy sets, 10 s per load step
    python load-tests/kyverno_side_by_side.py --sets vpol --seconds 5 --creates 100 --json /tmp/sbs.json

Policy sets: `vpol`, the 16 pod-security ValidatingPolicies of the shared corpus (`pod-security-vpol`); `cpol`,
the 19 pod-security ClusterPolicies (`pod-security/{baseline,restricted,subrule}`). They ship in Audit; both
sides get them switched to Enforce / Deny, because Kyverno evaluates Audit policies after it has answered
(off the request path) and a comparison of the answered request would then measure no policy at all.

For each set, each side in turn (alone registered, so a pod create goes through one of them):
- Kyverno: its install manifest and the set applied to the API server, `kyverno` started out of cluster
  (kyverno_peer.py); the direct reviews go to the path it registered for pods.
- Quartermaster: installed as the cluster tests install it (chart CRDs, RBAC, one live replica
  `serve --kubeconfig --policies SET`, the chart's webhook configurations) with the validating webhook's
  relevance filter off (`webhooks.validate.relevanceFilter=false`, as docs/deploy.md says for validating policies
  that must see every pod; with it, the API server would not send a compliant plain pod at all); the mutating
  webhook (DRA rewrite, notebook injection) keeps its filter, as Kyverno registers a mutating webhook only for
  policies that mutate. Direct reviews go to `/validate`.
Measured: a compliant pod's review at saturation (wrk, 32 connections) and at a fixed rate (paced open loop),
the server's CPU per review over both, its RSS after; then `--creates` pod creates through the API server,
one at a time, interleaved ten by ten with as many in a namespace no webhook is called for (labelled
quartermaster.dev/admission=disabled, which both sides are configured to leave out): the latency a side adds
is the difference of the two medians. With them, the webhook calls the API server made and their mean time as it
measured them (its apiserver_admission_webhook metrics). Quartermaster's creates are measured once more with the
relevance filter off on both webhooks (`webhooks.relevanceFilter.enabled=false`): two webhook calls per pod.
First of all, the same creates through the no-op responder (load-tests/noop.py) registered in Quartermaster's
place: what a call costs before any policy is evaluated.
Before measuring, a privileged pod's review must be denied by each side (the policies are loaded), and so must a
privileged pod's create through the API server (the side is in the create path).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO)]

import kyverno_peer  # noqa: E402
from drivers import Server, free_port, percentile, wrk  # noqa: E402
from kyverno_differential import default_corpus  # noqa: E402
from paced import Paced  # noqa: E402
from workload import review  # noqa: E402

NAMESPACE = "bench"
# The namespace no webhook is called for, the baseline of each side's pod creates: Quartermaster's chart leaves
# out namespaces with its opt-out label, and Kyverno is configured to leave them out too.
BASELINE = "bench-baseline"
OPT_OUT = ("quartermaster.dev/admission", "disabled")
# Validating policies that must see every pod: the validating webhook's relevance filter off, the mutating one's
# kept (docs/deploy.md), so a compliant plain pod costs one webhook call, as Kyverno's validating policies do.
VALIDATE_EVERY_POD = {"validate": {"relevanceFilter": False}}
# The filter off on both: the mutating webhook (DRA rewrite, notebook injection) is called for the pod too.
EVERY_POD_BOTH = {"relevanceFilter": {"enabled": False}}
RESTRICTED = {"runAsNonRoot": True, "runAsUser": 1000, "allowPrivilegeEscalation": False,
              "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}


def pod(name: str, privileged: bool = False, namespace: str = NAMESPACE) -> dict:
    security = {"privileged": True} if privileged else RESTRICTED
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": {"app": "web"}},
            "spec": {"hostNetwork": privileged, "containers": [{"name": "web", "image": "registry.example.org/web:1.4.2",
                                                                "securityContext": security}]}}


def enforced(doc: dict) -> dict:
    if doc.get("kind") == "ValidatingPolicy":
        doc["spec"]["validationActions"] = ["Deny"]
    elif doc.get("kind") in ("ClusterPolicy", "Policy"):
        doc["spec"]["validationFailureAction"] = "Enforce"
        for rule in doc["spec"].get("rules") or []:
            if "failureAction" in (rule.get("validate") or {}):
                rule["validate"]["failureAction"] = "Enforce"
    return doc


def write_set(corpus: Path, name: str, target: Path) -> int:
    if name == "vpol":
        sources = [p for p in sorted((corpus / "pod-security-vpol").rglob("*.yaml")) if ".kyverno-test" not in p.parts]
    else:
        sources = [p for level in ("baseline", "restricted", "subrule")
                   for p in sorted((corpus / "pod-security" / level).glob("*/*.yaml"))]
    target.mkdir(parents=True)
    count = 0
    for source in sources:
        docs = [enforced(d) for d in yaml.safe_load_all(source.read_text())
                if isinstance(d, dict) and d.get("kind") in ("ValidatingPolicy", "ClusterPolicy")]
        if docs:
            (target / f"{source.parent.parent.name}-{source.name}").write_text(yaml.safe_dump_all(docs))
            count += len(docs)
    return count


def post(base: str, ca: Path, path: str, body: dict) -> dict:
    import ssl
    import urllib.request

    request = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, context=ssl.create_default_context(cafile=str(ca)), timeout=30) as resp:
        return json.loads(resp.read())


def check_loaded(base: str, ca: Path, path: str, who: str) -> None:
    bad = post(base, ca, path, review(pod("privileged", privileged=True)))["response"]
    good = post(base, ca, path, review(pod("compliant")))["response"]
    if bad.get("allowed") or not good.get("allowed"):
        raise SystemExit(f"{who} {path}: the privileged pod was {'allowed' if bad.get('allowed') else 'denied'}, the "
                         f"compliant pod {'allowed' if good.get('allowed') else 'denied'} ({good.get('status')})")


def direct(base: str, ca: Path, path: str, cpu: Callable[[], float], args: argparse.Namespace, tmp: Path) -> dict:
    body = tmp / "review.json"
    body.write_text(json.dumps(review(pod("compliant"))))
    before = cpu()
    sat = wrk("saturation", base + path, body, args.seconds, connections=32)
    from webhook.server import eventloop

    endpoint = path.lstrip("/")
    measured = eventloop.run(Paced(base, ca, [(endpoint, body.read_bytes())]).run(args.rate, args.seconds),
                             eventloop.loop_factory("auto"))
    paced = measured.by_endpoint[endpoint]
    spent = cpu() - before
    answered = sat.requests + len(paced)
    return {"saturation_rps": round(sat.rps), "saturation_p50_ms": sat.p50_ms, "saturation_p99_ms": sat.p99_ms,
            "saturation_errors": sat.errors, f"paced_{args.rate}_p50_ms": round(percentile(paced, 0.5), 2),
            f"paced_{args.rate}_p99_ms": round(percentile(paced, 0.99), 2), "paced_errors": measured.errors,
            "cpu_us_per_review": round(spent / answered * 1e6) if answered else None}


def check_in_create_path(core, who: str) -> None:
    """A privileged pod created through the API server is denied: the side's webhook is called for pods."""
    from kubernetes.client.rest import ApiException

    deadline = time.monotonic() + 60
    while True:  # the API server picks a new registration up within moments
        try:
            core.create_namespaced_pod(NAMESPACE, pod(f"{who}-privileged", privileged=True))
        except ApiException as error:
            if error.status in (400, 403) and "denied the request" in (error.body or ""):
                return
            raise
        core.delete_namespaced_pod(f"{who}-privileged", NAMESPACE, grace_period_seconds=0)
        if time.monotonic() > deadline:
            raise SystemExit(f"{who}: a privileged pod created through the API server was admitted")
        time.sleep(1)


_WEBHOOK_SECONDS = re.compile(r'^apiserver_admission_webhook_admission_duration_seconds_(sum|count)\{([^}]*)\} (\S+)$', re.M)


def webhook_seconds(kubectl: list[str]) -> dict[str, list[float]]:
    """The API server's own account of its webhook calls: per webhook (and type), [calls, seconds] so far."""
    text = subprocess.run([*kubectl, "get", "--raw", "/metrics"], check=True, capture_output=True, text=True).stdout
    out: dict[str, list[float]] = {}
    for field, labels, value in _WEBHOOK_SECONDS.findall(text):
        tags = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        entry = out.setdefault(f"{tags.get('name')} ({tags.get('type')})", [0.0, 0.0])
        entry[0 if field == "count" else 1] += float(value)
    return out


def create_times(core, namespace: str, label: str, count: int) -> tuple[list[float], int]:
    """`count` pod creates in `namespace`, one at a time: their latencies (ms) and how many were refused."""
    from kubernetes.client.rest import ApiException

    times, denied = [], 0
    for i in range(count):
        started = time.perf_counter()
        try:
            core.create_namespaced_pod(namespace, pod(f"{label}-{i}", namespace=namespace))
        except ApiException:
            denied += 1
        times.append((time.perf_counter() - started) * 1000)
    return times, denied


def creates(core, kubectl: list[str], label: str, count: int, block: int = 10) -> dict:
    """`count` pod creates through the API server in NAMESPACE, which the side's webhooks are called for,
    interleaved `block` by `block` with as many in BASELINE, which no webhook is called for: the latency the side
    adds is the difference of the two medians, taken over the same minutes of the same run (the control plane
    drifts as objects pile up, and a baseline taken before would fold that drift in). With them, the webhook
    calls the API server made and their mean time, as the API server measured it. The pods are deleted after."""
    through, baseline, denied = [], [], 0
    before = webhook_seconds(kubectl)
    for start in range(0, count, block):
        size = min(block, count - start)
        times, refused = create_times(core, NAMESPACE, f"{label}-{start}", size)
        through += times
        denied += refused
        baseline += create_times(core, BASELINE, f"{label}-{start}", size)[0]
    after = webhook_seconds(kubectl)
    for namespace in (NAMESPACE, BASELINE):
        core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    calls = {}
    for name, (n, seconds) in after.items():
        n0, seconds0 = before.get(name, [0.0, 0.0])
        if n > n0:
            calls[name] = {"calls": int(n - n0), "mean_ms": round((seconds - seconds0) / (n - n0) * 1000, 2)}
    return {"create_p50_ms": round(percentile(through, 0.5), 2), "create_p99_ms": round(percentile(through, 0.99), 2),
            "baseline_p50_ms": round(percentile(baseline, 0.5), 2),
            "baseline_p99_ms": round(percentile(baseline, 0.99), 2),
            "added_p50_ms": round(percentile(through, 0.5) - percentile(baseline, 0.5), 2),
            "added_mean_ms": round((sum(through) - sum(baseline)) / len(through), 2),
            "create_denied": denied, "create_webhooks": calls}


def run_kyverno(ctx: dict, policies: Path, args: argparse.Namespace, tmp: Path) -> dict:
    kubectl = ctx["kubectl"]
    subprocess.run([*kubectl, "apply", "-f", str(policies)], check=True, capture_output=True, text=True)
    peer = kyverno_peer.start(ctx["kyverno"] / "kyverno", ctx["kubeconfig"], kubectl, free_port(), tmp)
    try:
        peer.wait_ready()
        deadline = time.monotonic() + 120
        while not (paths := [p for p in peer.webhook_paths() if "/validate" in p or "/vpol" in p]):
            if time.monotonic() > deadline:
                raise SystemExit(f"kyverno registered no validating webhook for pods; log {peer.log}")
            time.sleep(1)
        path = paths[0]
        check_loaded(peer.base, peer.ca, path, "kyverno")
        check_in_create_path(ctx["core"], "kyverno")
        pid = peer.process.pid
        result = {"path": path, **direct(peer.base, peer.ca, path, lambda: kyverno_peer.cpu_seconds(pid), args, tmp)}
        result["rss_mb"] = round(kyverno_peer.rss_mb(pid))
        result.update(creates(ctx["core"], ctx["kubectl"], "kyverno", args.creates))
        return result
    finally:
        peer.stop()
        subprocess.run([*kubectl, "delete", "-f", str(policies), "--ignore-not-found"], capture_output=True, text=True)


def run_quartermaster(ctx: dict, policies: Path, args: argparse.Namespace, tmp: Path, webhooks: dict,
                      direct_reviews: bool = True) -> dict:
    """Registered with the chart's webhook configurations rendered with `webhooks` (its `webhooks` values);
    `direct_reviews` False: only pod creates are measured (the direct reviews do not depend on the registration)."""
    installation = ctx["installation"]
    installation.policies = policies
    replica = installation.start_replica(f"replica-{policies.name}-{'direct' if direct_reviews else 'creates'}")
    try:
        installation.url = f"https://127.0.0.1:{replica.port}"
        installation.register({**installation.values, "webhooks": webhooks})
        ca = installation.cert_dir / "ca.crt"
        check_loaded(installation.url, ca, "/validate", "quartermaster")
        check_in_create_path(ctx["core"], "quartermaster")
        if not direct_reviews:
            return creates(ctx["core"], ctx["kubectl"], "quartermaster-both-filtered-off", args.creates)
        pid = replica.process.pid
        result = {"path": "/validate",
                  **direct(installation.url, ca, "/validate", lambda: kyverno_peer.cpu_seconds(pid), args, tmp)}
        result["rss_mb"] = round(kyverno_peer.rss_mb(pid))
        result.update(creates(ctx["core"], ctx["kubectl"], "quartermaster", args.creates))
        return result
    finally:
        installation.stop()


def run_noop(ctx: dict, args: argparse.Namespace) -> dict:
    """The yardstick in the create path: load-tests/noop.py (aiohttp over TLS, allows everything, decides nothing)
    registered as Quartermaster's validating webhook is, with Quartermaster's certificate: what a webhook call
    costs the API server and a Python HTTPS server before any policy is evaluated."""
    installation = ctx["installation"]
    port = free_port()
    noop = Server([sys.executable, str(HERE / "noop.py"), "--port", str(port), "--cert",
                   str(installation.cert_dir / "tls.crt"), "--key", str(installation.cert_dir / "tls.key")],
                  port, installation.cert_dir / "ca.crt")
    try:
        if noop.wait_ready(30) is None:
            raise SystemExit("the no-op responder did not become ready")
        installation.url = f"https://127.0.0.1:{port}"
        installation.register({**installation.values, "webhooks": VALIDATE_EVERY_POD})
        deadline = time.monotonic() + 60
        while not any("validate.quartermaster.dev" in name for name in creates(ctx["core"], ctx["kubectl"], "noop-probe",
                                                                                 1, block=1)["create_webhooks"]):
            if time.monotonic() > deadline:  # the API server picks a new registration up within moments
                raise SystemExit("the no-op responder was never called for a pod create")
            time.sleep(1)
        return creates(ctx["core"], ctx["kubectl"], "noop", args.creates)
    finally:
        installation.unregister()
        noop.proc.terminate()
        noop.proc.wait(10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=default_corpus())
    parser.add_argument("--sets", default="vpol,cpol", help="comma-separated: vpol, cpol")
    parser.add_argument("--seconds", type=float, default=10.0, help="each load step")
    parser.add_argument("--rate", type=int, default=250, help="the fixed rate, reviews a second")
    parser.add_argument("--creates", type=int, default=200, help="pod creates through the API server per side")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    sets = [s for s in args.sets.split(",") if s]
    if not set(sets) <= {"vpol", "cpol"}:
        parser.error(f"--sets {args.sets}: each must be vpol or cpol")
    from kubernetes import client, config

    from tests.cluster.control import binary, down, up
    from tests.cluster.kube import Kube
    from tests.cluster.quartermaster import install

    kyverno = kyverno_peer.binaries()
    results: dict = {"command": " ".join(["python", "load-tests/kyverno_side_by_side.py", *sys.argv[1:]])}
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        record = up(tmp / "cluster")
        try:
            kubectl = [str(binary()), "kubectl", f"--kubeconfig={record.admin_kubeconfig}"]
            core = client.CoreV1Api(config.new_client_from_config(config_file=str(record.admin_kubeconfig)))
            core.create_namespace({"metadata": {"name": NAMESPACE}})
            subprocess.run([*kubectl, "-n", NAMESPACE, "wait", "--for=create", "serviceaccount/default",
                            "--timeout=60s"], check=True, capture_output=True)
            core.create_namespace({"metadata": {"name": BASELINE, "labels": {OPT_OUT[0]: OPT_OUT[1]}}})
            kyverno_peer.install_manifest(kubectl, tmp, excluded_label=OPT_OUT)
            admin = Kube(record, record.admin_kubeconfig, binary())
            ctx = {"kubectl": kubectl, "kubeconfig": record.admin_kubeconfig, "core": core, "kyverno": kyverno,
                   "installation": install(admin, record, tmp / "quartermaster")}
            results["no-op responder (load-tests/noop.py) as the validating webhook"] = run_noop(ctx, args)
            print(json.dumps(results), flush=True)
            for name_ in sets:
                policies = tmp / name_
                count = write_set(args.corpus, name_, policies)
                results[f"{name_} ({count} policies) kyverno"] = run_kyverno(ctx, policies, args, tmp)
                print(json.dumps(results), flush=True)
                results[f"{name_} ({count} policies) quartermaster"] = run_quartermaster(
                    ctx, policies, args, tmp, VALIDATE_EVERY_POD)
                print(json.dumps(results), flush=True)
                results[f"{name_} ({count} policies) quartermaster, relevance filter off on both webhooks"] = \
                    run_quartermaster(ctx, policies, args, tmp, EVERY_POD_BOTH, direct_reviews=False)
                print(json.dumps(results), flush=True)
        finally:
            down(tmp / "cluster")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
