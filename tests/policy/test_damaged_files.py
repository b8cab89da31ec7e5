"""Policy files that would silently weaken enforcement: emptied, damaged (NUL, control characters), unreadable."""

import json
import subprocess
import sys

import pytest
import yaml

import webhook.app
from webhook.cli import main
from tests.kinds import ADD_ZONE, REQUIRE_TEAM, pod, test_registry
from tests.support import eventually, free_port, policy_dir, review, running_server


ALIAS_BOMB = "bomb0: &a0 [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"bomb{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 6))


@pytest.fixture
def policies(tmp_path):
    return policy_dir(tmp_path / "policies", {"require.yaml": REQUIRE_TEAM, "add.yaml": ADD_ZONE})


async def readyz(server):
    status, text = await server.get("/readyz")
    return status, json.loads(text)


@pytest.mark.parametrize("damage, reason", [
    (b"", "now holds no documents"),
    (b"# all policies moved elsewhere\n---\n", "now holds no documents"),
    (REQUIRE_TEAM.encode()[:40] + b"\x00" + REQUIRE_TEAM.encode()[40:], "control character U+0000"),
    (b"apiVersion: v1\x1b[31m\n", "control character U+001B"),
    (b"\xff\xfe\xfa not utf-8", "cannot read"),
    # aliases: a node graph of 50 nodes that any walk sees as 531,441 (9^6), or a list that contains itself
    ((REQUIRE_TEAM + ALIAS_BOMB).encode(), "require.yaml:11: document 0: invalid YAML: excessive aliasing"),
    ((REQUIRE_TEAM + "extra: &r [1, *r]\n").encode(), "require.yaml:7: document 0: invalid YAML: an alias refers"),
])
async def test_damaged_file_is_a_refused_edit_until_deleted(policies, tmp_path, damage, reason):
    async with running_server(policies, tmp_path, registry=test_registry()) as server:
        assert (await server.admit("/validate", review(pod())))["allowed"] is False
        (policies / "require.yaml").write_bytes(damage)
        status, body = await _eventually_degraded(server)
        assert status == 200 and body["status"] == "degraded"
        assert any(e.startswith("require.yaml") and reason in e for e in body["policyErrors"]), body
        assert (await server.admit("/validate", review(pod())))["allowed"] is False  # the quota-like policy still holds
        metrics = (await server.get("/metrics"))[1]
        assert "quartermaster_policy_load_failing 1.0" in metrics
        (policies / "require.yaml").unlink()  # deleting is how policies are removed
        status, body = await _eventually_ready(server)
        assert body["status"] == "ready" and body["policyErrors"] == []
        assert (await server.admit("/validate", review(pod())))["allowed"] is True


async def _eventually_degraded(server):
    async def check():
        status, body = await readyz(server)
        return (status, body) if body["status"] == "degraded" else None
    return await eventually(check, message="never degraded")


async def _eventually_ready(server):
    async def check():
        status, body = await readyz(server)
        return (status, body) if body["status"] == "ready" and body["policyGeneration"] > 1 else None
    return await eventually(check, message="never ready again")


@pytest.mark.parametrize("content", [b"kind: RequireLabel\x00\n", b"\x07\n"])
def test_serve_exits_2_naming_file_and_reason(tmp_path, content):
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "bad.yaml").write_bytes(content)
    proc = subprocess.run([sys.executable, "-m", "webhook", "serve", "--policies", str(policies), "--cert-dir",
                           str(tmp_path / "certs"), "--port", str(free_port())], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "bad.yaml:1: document 0: control character" in proc.stderr and "Traceback" not in proc.stderr


def test_apply_exits_2_on_damaged_policy(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(webhook.app, "build_registry", test_registry)
    policies = tmp_path / "p"
    policies.mkdir()
    (policies / "r.yaml").write_bytes(REQUIRE_TEAM.encode() + b"\x00")
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(yaml.safe_dump(pod(labels={"team": "a"})))
    assert main(["apply", "--policies", str(policies), str(manifest)]) == 2
    assert "r.yaml" in capsys.readouterr().err


def test_deeply_nested_yaml_is_refused_not_a_crash(tmp_path):
    from webhook.cel import CelCompiler
    from webhook.policy.loader import PolicyLoader
    (tmp_path / "deep.yaml").write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    result = PolicyLoader(test_registry(), CelCompiler()).load(tmp_path)
    (error,) = result.errors
    assert error.file == "deep.yaml" and "nested too deeply" in error.message
