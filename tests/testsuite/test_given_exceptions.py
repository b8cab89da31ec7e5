"""`quartermaster test` honours the exceptions a suite hands over (its `exceptions:`), for any resource, as the
Kyverno CLI does; `--exception-namespace` asks for serve's rules instead (webhook/model/exception_trust.py)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.families.kyverno.test_tenancy import DISALLOW_PRIVILEGED, TENANT_EXCEPTION, pod
from webhook.cli import main


def _suite(tmp: Path) -> Path:
    tmp.mkdir()
    (tmp / "policy.yaml").write_text(DISALLOW_PRIVILEGED)
    # the exception of team-a also names a pod of kube-system: handed over by the suite, it is honoured as written
    (tmp / "exception.yaml").write_text(TENANT_EXCEPTION)
    (tmp / "resources.yaml").write_text(yaml.safe_dump_all([pod("kube-system", privileged=True, name="system"),
                                                            pod("team-a", privileged=True, name="own")]))
    (tmp / "kyverno-test.yaml").write_text(json.dumps({
        "apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Test", "metadata": {"name": "exceptions"},
        "policies": ["policy.yaml"], "exceptions": ["exception.yaml"], "resources": ["resources.yaml"],
        "results": [{"policy": "disallow-privileged", "rule": "privileged-containers", "kind": "Pod",
                     "resources": ["system", "own"], "result": "skip"}]}))
    return tmp


def test_a_suites_own_exceptions_are_honoured_as_the_kyverno_cli_does(tmp_path, capsys):
    assert main(["test", str(_suite(tmp_path / "s"))]) == 0
    assert capsys.readouterr().out.strip().endswith("2 passed, 0 failed")


def test_with_exception_namespaces_a_suite_is_judged_by_serves_rules(tmp_path, capsys):
    suite = _suite(tmp_path / "s")
    assert main(["test", str(suite), "--exception-namespace", "platform"]) == 1  # team-a's is refused
    capsys.readouterr()
    assert main(["test", str(suite), "--exception-namespace", "team-a"]) == 1  # kube-system's pod is not exempt
    assert "1 passed, 1 failed" in capsys.readouterr().out
