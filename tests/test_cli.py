"""The command line as a user runs it: `quartermaster serve` as a subprocess, `apply` exit codes and streams."""

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import webhook.app
from webhook.cli import main
from tests.kinds import ADD_ZONE, REQUIRE_TEAM, pod, test_registry
from tests.support import free_port, https, review, wait_until_ready


@pytest.mark.parametrize("event_loop", ["asyncio", "uvloop"])
def test_serve_subprocess_answers_over_https(tmp_path, event_loop):
    policies = tmp_path / "policies"
    policies.mkdir()
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "webhook", "serve", "--policies", str(policies), "--cert-dir",
                             str(tmp_path / "certs"), "--host", "127.0.0.1", "--port", str(port), "--log-level", "debug",
                             "--event-loop", event_loop],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        ca = tmp_path / "certs" / "ca.crt"
        wait_until_ready(proc, f"https://127.0.0.1:{port}", ca)
        status, body = https(f"https://127.0.0.1:{port}/validate", ca, json.dumps(review(pod(), uid="u-1")).encode())
        assert status == 200 and json.loads(body)["response"] == {"uid": "u-1", "allowed": True}
        status, body = https(f"https://127.0.0.1:{port}/mutate", ca, b"{not json")
        assert status == 400 and b"not JSON" in body
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0
    logs = [json.loads(line) for line in err.decode().splitlines() if line.startswith("{")]
    assert any(entry.get("uid") == "u-1" and entry["msg"] == "validate allowed" for entry in logs)
    assert [e["event_loop"] for e in logs if e["msg"].startswith("serving HTTPS")] == [event_loop]
    assert oct((tmp_path / "certs" / "tls.key").stat().st_mode & 0o777) == "0o600"


def test_serve_without_uvloop_says_so_or_falls_back(tmp_path, capsys, monkeypatch):
    from webhook.server.eventloop import loop_factory

    monkeypatch.setitem(sys.modules, "uvloop", None)  # as on a platform without its wheels: import fails
    assert main(["serve", "--event-loop", "uvloop", "--policies", str(tmp_path)]) == 2
    assert "--event-loop uvloop: uvloop cannot be imported" in capsys.readouterr().err
    assert loop_factory("auto") == ("asyncio", None)  # the default falls back to asyncio's own loop


def test_serve_refuses_broken_policies(tmp_path):
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "x.yaml").write_text("apiVersion: nope/v1\nkind: Thing\nmetadata: {name: t}\n")
    proc = subprocess.run([sys.executable, "-m", "webhook", "serve", "--policies", str(policies), "--cert-dir",
                           str(tmp_path / "certs"), "--port", str(free_port())], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "x.yaml:2: document 0 field kind: unknown policy kind nope/v1 Thing" in proc.stderr


def test_help_lists_commands():
    proc = subprocess.run([sys.executable, "-m", "webhook", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "serve" in proc.stdout and "apply" in proc.stdout


@pytest.fixture
def test_kinds(monkeypatch):
    monkeypatch.setattr(webhook.app, "build_registry", test_registry)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_apply_admits_and_prints_only_yaml(tmp_path, test_kinds, capsys):
    policies = tmp_path / "p"
    policies.mkdir()
    write(policies / "a.yaml", ADD_ZONE)
    manifest = write(tmp_path / "pod.yaml", yaml.safe_dump(pod("a", labels={"team": "x"})))
    assert main(["apply", "--detailed-results", "--policies", str(policies), str(manifest)]) == 0
    out, err = capsys.readouterr()
    (doc,) = list(yaml.safe_load_all(out))
    assert doc["metadata"]["labels"] == {"team": "x", "example.org/zone~a": "b"}
    assert "add-zone" in err and "1 admitted, 0 denied" in err


def test_apply_denied_exit_1(tmp_path, test_kinds, capsys):
    policies = tmp_path / "p"
    policies.mkdir()
    write(policies / "r.yaml", REQUIRE_TEAM)
    manifest = write(tmp_path / "pods.yaml", yaml.safe_dump_all([pod("ok", labels={"team": "x"}), pod("bad")]))
    assert main(["apply", "--policies", str(policies), str(manifest)]) == 1
    out, err = capsys.readouterr()
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(out)] == ["ok"]
    assert "DENIED Pod jdoe/bad" in err and "add the label team" in err


@pytest.mark.parametrize("content, message", [
    ("kind: [", "invalid YAML"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {}\n", "metadata.name"),
    ("- just a list\n", "apiVersion and kind"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: nope\n", "in.yaml document 0: Pod.spec must be an object"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {a: 1}}\nspec: {}\n", "Pod.metadata.labels['a'] must be a string"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [nope]}\n", "Pod.spec.containers[0] must be an object"),
])
def test_apply_bad_input_exit_2(tmp_path, test_kinds, capsys, content, message):
    policies = tmp_path / "p"
    policies.mkdir()
    manifest = write(tmp_path / "in.yaml", content)
    assert main(["apply", "--policies", str(policies), str(manifest)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_apply_missing_file_and_bad_policies(tmp_path, test_kinds, capsys):
    policies = tmp_path / "p"
    policies.mkdir()
    assert main(["apply", "--policies", str(policies), str(tmp_path / "none.yaml")]) == 2
    assert "cannot read" in capsys.readouterr().err
    write(policies / "r.yaml", REQUIRE_TEAM + "  extra: 1\n")
    manifest = write(tmp_path / "pod.yaml", yaml.safe_dump(pod()))
    assert main(["apply", "--policies", str(policies), str(manifest)]) == 2
    assert "r.yaml:7: document 0 field spec.extra" in capsys.readouterr().err


def test_serve_refuses_a_missing_client_ca(tmp_path, capsys):
    assert main(["serve", "--client-ca", str(tmp_path / "none.crt"), "--policies", str(tmp_path)]) == 2
    assert "--client-ca" in capsys.readouterr().err
