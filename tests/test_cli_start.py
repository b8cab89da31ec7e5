"""What a short command imports (issue 12: `--version` <= 100 ms, `apply` of one pod <= 400 ms). Checked by the
modules a fresh process holds afterwards, never by timing: a heavy module imported again by accident shows here."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from tests.support import REPO
from webhook.app import Quartermaster, Settings
from webhook.engine.offline import admit_offline

HEAVY = ["jsonschema", "aiohttp", "kubernetes", "cryptography", "celpy", "lark", "jmespath", "opentelemetry",
         "webhook.families", "webhook.server.app", "webhook.server.handlers", "webhook.kube.client"]


def _imported_after(call: str, prefixes: list[str]) -> tuple[object, list[str]]:
    code = ("import json, sys\nfrom webhook.cli import main\n"
            f"try:\n    code = {call}\nexcept SystemExit as exc:\n    code = exc.code\n"
            f"print(json.dumps([code, sorted(m for m in sys.modules if any(m == p or m.startswith(p + '.') for p in {prefixes!r}))]),"
            " file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.stderr.strip(), proc
    result = json.loads(proc.stderr.strip().splitlines()[-1])
    return result[0], result[1]


def test_apply_of_platform_policies_leaves_the_heavy_modules_unimported():
    # prometheus_client: a one-shot command serves no metrics; multiprocessing: only a large --state forks a reader
    code, imported = _imported_after(
        "main(['apply', '--policies', 'policies', '--state', 'examples/state', '--user', "
        "'system:serviceaccount:kube-system:statefulset-controller', 'examples/notebook-pod.yaml'])",
        HEAVY + ["prometheus_client", "multiprocessing"])
    # jsonschema checks every policy document against its kind's schema (webhook/policy/family.py): the one
    # heavy module `apply` imports
    assert code == 0 and imported == ["jsonschema"] + [m for m in imported if m.startswith("jsonschema.")]


def test_validate_and_report_leave_prometheus_unimported():
    for call in ("main(['validate', 'policies'])", "main(['report', '--policies', 'policies', '--state', 'examples/state'])"):
        code, imported = _imported_after(call, ["prometheus_client", "aiohttp"])
        assert code == 0 and imported == [], call


COMMAND_MODULES = ["webhook.report_command", "webhook.convert_command", "webhook.validate_command", "webhook.refresher",
                   "webhook.deploy", "webhook.testsuite"]


def test_version_imports_no_command():
    code, imported = _imported_after("main(['--version'])", HEAVY + COMMAND_MODULES + [
        "asyncio", "yaml", "webhook.app", "webhook.engine"])
    assert code == 0 and imported == []


def test_a_command_imports_no_other_commands_module():
    code, imported = _imported_after("main(['validate', 'policies'])", COMMAND_MODULES)
    assert code == 0 and imported == ["webhook.validate_command"]



def test_a_quartermaster_built_without_metrics_admits_but_cannot_serve():
    qm = Quartermaster.build(Settings(policies=REPO / "policies", state=REPO / "examples" / "state"), with_metrics=False)
    assert qm.metrics is None and qm.load_policies().ok
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    assert asyncio.run(admit_offline(qm.engine, pod, dry_run=True)).allowed
    with pytest.raises(RuntimeError, match="with_metrics=False"):
        qm.services()
    assert Quartermaster.build(Settings(policies=REPO / "policies")).metrics is not None  # serve's default
