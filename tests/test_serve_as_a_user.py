"""`quartermaster serve` as a user starts it from the README: the default address, /metrics as Prometheus
reads it, and logs a person can act on (denials with policy, rule, message and user; decisions at debug)."""

from __future__ import annotations

import copy
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.support import REPO, free_port, https, wait_until_ready
from webhook import __version__


def samples(text: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append(sample)
    return out


def two_gpu_review() -> bytes:
    review = json.loads((REPO / "examples" / "review-gpu-pod.json").read_text())
    denied = copy.deepcopy(review)
    denied["request"]["uid"] = "too-many-gpus"
    denied["request"]["object"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 2
    return json.dumps(denied).encode()


def test_serve_defaults_metrics_and_logs(tmp_path):
    port = free_port()
    started = time.time()
    proc = subprocess.Popen([sys.executable, "-m", "webhook", "serve", "--state", str(REPO / "examples" / "state"),
                             "--policies", str(REPO / "policies"), "--cert-dir", str(tmp_path / "certs"),
                             "--port", str(port), "--log-level", "debug"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    ca = tmp_path / "certs" / "ca.crt"
    base = f"https://localhost:{port}"
    try:
        wait_until_ready(proc, f"{base}", ca)
        review = (REPO / "examples" / "review-gpu-pod.json").read_bytes()
        assert https(f"{base}/mutate", ca, review)[0] == 200
        status, body = https(f"{base}/validate", ca, two_gpu_review())
        assert status == 200 and json.loads(body)["response"]["allowed"] is False
        status, text = https(f"{base}/metrics", ca)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0 and status == 200
    metrics = samples(text.decode())
    (build,) = metrics["quartermaster_build_info"]
    assert build.labels["version"] == __version__ and build.value == 1
    assert metrics["process_resident_memory_bytes"][0].value > 10e6
    assert metrics["process_open_fds"][0].value > 3 and metrics["process_cpu_seconds_total"][0].value > 0
    assert abs(metrics["process_start_time_seconds"][0].value - started) < 30
    results = {(s.labels["policy"], s.labels["rule"], s.labels["result"], s.labels["mode"], s.labels["resource_kind"],
                s.labels["resource_namespace"]): s.value for s in metrics["quartermaster_policy_results_total"]}
    assert results[("profile-quota", "gpu-quota", "fail", "enforce", "Pod", "jdoe")] == 1

    lines = err.decode().splitlines()
    logs = [json.loads(line) for line in lines]  # every line is JSON: no raw Python logging
    (serving,) = [e for e in logs if e["msg"] == f"serving HTTPS on 127.0.0.1:{port}"]  # not every interface
    assert serving["event_loop"] == "uvloop"  # the default where uvloop is installed, as it is with the package
    (denial,) = [e for e in logs if e.get("uid") == "too-many-gpus" and e["level"] == "info"]
    assert denial["policy"] == "profile-quota" and denial["rule"] == "gpu-quota" and denial["user"] == "jdoe@example.org"
    assert denial["msg"].startswith("validate denied Pod jdoe/train by jdoe@example.org: profile-quota/gpu-quota: ")
    assert len(denial["msg"]) < 400
    decisions = [e for e in logs if e["level"] == "debug" and e.get("rule")]  # --log-level debug: every decision
    assert ("mutate", "device-claim-rewrite", "pass") in {(e["endpoint"], e["policy"], e["result"]) for e in decisions}
    assert ("validate", "storage-quota", "pass") in {(e["endpoint"], e["rule"], e["result"]) for e in decisions}


def test_only_the_chart_listens_on_every_interface():
    from tests.chart.support import render
    from webhook.cli import build_parser

    assert build_parser().parse_args(["serve"]).host == "127.0.0.1"
    (container,) = render().one("Deployment")["spec"]["template"]["spec"]["containers"]
    assert "--host=0.0.0.0" in container["args"]  # the pod must answer the Service on its own IP


def run_server(tmp_path: Path, *args: str, reviews: tuple[bytes, ...] = ()) -> tuple[list[dict], list[dict]]:
    """Start `serve` with these arguments, send the reviews to /validate, stop it: (answers, log lines)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "webhook", "serve", "--state", str(REPO / "examples" / "state"),
                             "--cert-dir", str(tmp_path / "certs"), "--port", str(port), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    ca, answers = tmp_path / "certs" / "ca.crt", []
    try:
        wait_until_ready(proc, f"https://localhost:{port}", ca)
        for body in reviews:
            answers.append(json.loads(https(f"https://localhost:{port}/validate", ca, body)[1])["response"])
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    return answers, [json.loads(line) for line in err.decode().splitlines()]


def test_force_audit_warns_instead_of_denying(tmp_path):
    (answer,), logs = run_server(tmp_path, "--policies", str(REPO / "policies"), "--force-audit",
                                 reviews=(two_gpu_review(),))
    assert answer["allowed"] is True and answer["warnings"][0].startswith("profile-quota: ")
    assert any(e["msg"] == "--force-audit: every policy warns and reports, none blocks" for e in logs)
    (warned,) = [e for e in logs if e.get("uid") == "too-many-gpus"]
    assert warned["msg"].startswith("validate warned Pod jdoe/train") and warned["mode"] == "Audit"


def test_empty_policy_directory_is_a_warning(tmp_path):
    (tmp_path / "none").mkdir()
    _, logs = run_server(tmp_path, "--policies", str(tmp_path / "none"))
    assert [e["level"] for e in logs if "no policy file in" in e["msg"]] == ["warning"]
    _, logs = run_server(tmp_path, "--policies", str(tmp_path / "none"), "--allow-empty")
    assert not [e for e in logs if "no policy file in" in e["msg"]]
