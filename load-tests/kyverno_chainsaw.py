#!/usr/bin/env python3
"""Kyverno's own end-to-end conformance: the chainsaw tests of the Kyverno release pinned in
load-tests/kyverno/go.mod, run with chainsaw (load-tests/chainsaw/go.mod) against Quartermaster installed in
the test control plane in Kyverno's place (kyverno_chainsaw_setup.py says how, and the one change made to
the tests: the policy-readiness step templates).

    python load-tests/kyverno_chainsaw.py                       # every supported folder; builds what it needs
    python load-tests/kyverno_chainsaw.py --folders cel,exceptions --json /tmp/chainsaw.json
    python load-tests/kyverno_chainsaw.py --list                # each folder: run, or left out and why

Prints per folder: tests, passed, failed, and the first failure's reason. From a fresh machine: builds the
control plane (tests/cluster/build) and chainsaw (load-tests/chainsaw/build), downloads Kyverno's module
for its tests and CRDs, brings the control plane up in a scratch directory and down at the end.
Not part of the default test run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO)]

import kyverno_chainsaw_setup as setup  # noqa: E402

# Folders whose behaviour Quartermaster implements, smallest first (so a short run still covers many).
SUPPORTED = (
    "cel", "rangeoperators", "namespaced-mutating-policies", "namespaced-generating-policies",
    "namespaced-validating-policies", "deferred", "filter", "background-only", "autogen", "globalcontext",
    "policy-validation", "exceptions", "mutating-policies", "validating-policies", "mutate",
    "generating-policies", "validate", "generate",
)
# Folders that test Kyverno's own machinery, not policy semantics Quartermaster implements.
LEFT_OUT = {
    "assert": "empty in this release (no test)",
    "cleanup": "Kyverno's cleanup controller (CleanupPolicy, ClusterCleanupPolicy): not implemented",
    "cli": "the kyverno CLI (kubectl-kyverno), not the admission controller",
    "configs": "Kyverno's own ConfigMap (generateSuccessEvents) and the Events it emits",
    "custom-sigstore": "image signature verification against a private Sigstore: not implemented",
    "sigstore-custom-tuf": "image signature verification with a custom TUF root: not implemented",
    "verify-images": "verifyImages rules (cosign/notary against live registries): not implemented",
    "verify-manifests": "validate.manifests (signed YAML through k8s-manifest-sigstore): not implemented",
    "image-validating-policies": "ImageValidatingPolicy (signature verification): not implemented",
    "namespaced-image-validating-policies": "NamespacedImageValidatingPolicy: not implemented",
    "deleting-policies": "DeletingPolicy: Kyverno's cleanup controller deletes on a schedule; not implemented",
    "namespaced-deleting-policies": "NamespacedDeletingPolicy: as deleting-policies",
    "events": "the Events Kyverno's controllers emit (PolicyApplied, PolicyViolation) by its names",
    "flags": "the admission controller's command-line flags (its Deployment in the kyverno namespace)",
    "force-failure-policy-ignore": "Kyverno's forceFailurePolicyIgnore flag on its own webhook configurations",
    "generate-mutating-admission-policy": "Kyverno generating MutatingAdmissionPolicies from ClusterPolicies",
    "generate-mutating-admission-policy-alpha": "as generate-mutating-admission-policy (v1alpha1 API)",
    "generate-mutating-admission-policy-v1": "as generate-mutating-admission-policy (v1 API)",
    "generate-validating-admission-policy": "Kyverno generating ValidatingAdmissionPolicies from its policies",
    "lease": "the Leases of Kyverno's four controllers in the kyverno namespace",
    "mutating-admission-policy-reports": "reports Kyverno's reports controller writes for in-tree MAPs",
    "mutating-admission-policy-reports-alpha": "as mutating-admission-policy-reports",
    "mutating-admission-policy-reports-v1": "as mutating-admission-policy-reports",
    "validating-admission-policy-reports": "reports Kyverno's reports controller writes for in-tree VAPs",
    "openreports": "the openreports.io report API written by Kyverno's reports controller",
    "reports": "Kyverno's reports controller (EphemeralReports aggregated into its PolicyReport layout)",
    "reports-exclude-result": "a reports-controller flag (exclude results by policy)",
    "policy-exceptions-disabled": "Kyverno with its policy-exceptions feature flag off (a different install)",
    "rbac": "the aggregated ClusterRoles Kyverno's Helm chart installs",
    "tls-certificates": "Kyverno's own certificate management (cert-manager, its key algorithms)",
    "ttl": "the cleanup controller's cleanup.kyverno.io/ttl label",
    "webhook-configurations": "the webhook configurations Kyverno writes from its policies, by its names",
    "webhooks": "the webhook configurations Kyverno writes (names, rules per policy), asserted as objects",
}


@dataclass(frozen=True)
class FolderResult:
    folder: str
    tests: int
    passed: int
    failed: int
    skipped: int
    unfinished: int  # in chunks cut off by the time limits (counted apart: neither passed nor failed)
    first_failure: str
    seconds: float


def chainsaw_config(assert_seconds: int, parallel: int) -> dict[str, Any]:
    """Short timeouts: a failing assert waits its whole timeout, and Quartermaster loads a policy in ~2 s."""
    timeout = f"{assert_seconds}s"
    return {
        "apiVersion": "chainsaw.kyverno.io/v1alpha2", "kind": "Configuration", "metadata": {"name": "quartermaster"},
        "spec": {
            "cleanup": {"delayBeforeCleanup": "1s"},
            "discovery": {"fullName": True},
            "execution": {"failFast": False, "parallel": parallel, "forceTerminationGracePeriod": "5s"},
            "namespace": {},
            "timeouts": {"apply": "10s", "assert": timeout, "error": timeout, "delete": "30s",
                         "cleanup": "30s", "exec": "30s"},
        },
    }


_RESULT = re.compile(r"^    --- (PASS|FAIL|SKIP): chainsaw/(\S+?)(\[|\s)")
_ERROR = re.compile(r"=== ERROR\s*\n((?:\s*-+\s*\n)?(?:\s*\S.*\n){1,4})")


def failure_of(test: dict[str, Any]) -> str:
    for step in test.get("steps") or []:
        for operation in step.get("operations") or []:
            if operation.get("failure"):
                text = " ".join(str(operation["failure"].get("error", "")).split())
                return f"{step.get('name', '')}/{operation.get('type', '')}: {text}"
    return ""


@dataclass(frozen=True)
class ChunkResult:
    """One chainsaw run: each test's outcome as `go test` prints it (a failure outside any operation, such as
    a namespace chainsaw could not create, is in the log only), and the first failure's reason."""
    outcomes: dict[str, str]
    first_failure: str


def read_chunk(log: str, report: dict[str, Any]) -> ChunkResult:
    outcomes = {m.group(2): m.group(1) for m in map(_RESULT.match, log.splitlines()) if m}
    reasons = {t.get("name", ""): failure_of(t) for t in report.get("tests") or []}
    failed = sorted(name for name, outcome in outcomes.items() if outcome == "FAIL")
    first = ""
    if failed:
        leaf = failed[0].rsplit("/", 1)[-1]
        why = reasons.get(leaf) or next((" ".join(line.strip() for line in m.group(1).splitlines()
                                                  if line.strip().strip("-"))
                                         for m in _ERROR.finditer(log)), "see the log")
        first = f"{failed[0]}: {why}"[:300]
    return ChunkResult(outcomes, first)


CHUNK_TESTS = 8
CHUNK_SECONDS = 90.0  # a test that waits out Kyverno's own long timeouts (background scans) holds up only its chunk


def chunks(folder: Path) -> list[Path]:
    """A folder split into directories of at most CHUNK_TESTS tests, each run alone: a folder cut short by its
    time limit still counts the chunks that finished, and one unloadable test stops only its chunk."""
    subdirs = sorted(p for p in folder.iterdir() if p.is_dir())
    if (folder / "chainsaw-test.yaml").exists() or not subdirs \
            or len(list(folder.rglob("chainsaw-test.yaml"))) <= CHUNK_TESTS:
        return [folder]
    return [chunk for sub in subdirs for chunk in chunks(sub)]


def run_folder(chainsaw: Path, tests: Path, folder: str, config: Path, reports: Path, env: dict[str, str],
               timeout: float) -> FolderResult:
    """chainsaw over each chunk of a folder, within `timeout` seconds in all; the cluster is env's KUBECONFIG's."""
    started = time.monotonic()
    if not any((tests / folder).rglob("chainsaw-test.yaml")):
        return FolderResult(folder, 0, 0, 0, 0, 0, "no test of the folder loads in Kyverno's own tree", 0.0)
    outcomes: dict[str, str] = {}
    first, unfinished = "", 0
    setup.delete_policies(env)  # whatever an earlier folder's cut-off chunk left must not judge this one
    for chunk in chunks(tests / folder):
        left = min(timeout - (time.monotonic() - started), CHUNK_SECONDS)
        if left <= 0:
            unfinished += len(list(chunk.rglob("chainsaw-test.yaml")))
            continue
        name = str(chunk.relative_to(tests)).replace("/", "_")
        command = [str(chainsaw), "test", "--test-dir", str(chunk), "--config", str(config),
                   "--report-format", "JSON", "--report-path", str(reports), "--report-name", name, "--no-color"]
        log = reports / f"{name}.log"
        with open(log, "wb") as out:
            try:
                subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=left, cwd=chunk)
            except subprocess.TimeoutExpired:
                unfinished += len(list(chunk.rglob("chainsaw-test.yaml")))
                setup.delete_policies(env)  # chainsaw, killed, cleaned nothing up: its policies must not judge the next chunk
                continue
        report = reports / f"{name}.json"
        result = read_chunk(log.read_text(errors="replace"), json.loads(report.read_text()) if report.exists() else {})
        if not result.outcomes and not first:
            first = f"{name}: chainsaw ran no test: {log.read_text(errors='replace')[-200:]}"
        outcomes.update({f"{chunk.relative_to(tests / folder)}/{k}": v for k, v in result.outcomes.items()})
        first = first or result.first_failure
    count = {k: sum(1 for v in outcomes.values() if v == k) for k in ("PASS", "FAIL", "SKIP")}
    return FolderResult(folder, len(outcomes) + unfinished, count["PASS"], count["FAIL"], count["SKIP"], unfinished,
                        first, round(time.monotonic() - started, 1))


def print_table(results: list[FolderResult]) -> None:
    print(f"{'folder':32} {'tests':>5} {'pass':>5} {'fail':>5} {'skip':>5} {'unfin':>5}  first failure")
    for r in results:
        print(f"{r.folder:32} {r.tests:5} {r.passed:5} {r.failed:5} {r.skipped:5} {r.unfinished:5}  {r.first_failure}")
    run = sum(r.passed + r.failed for r in results)
    passed = sum(r.passed for r in results)
    print(f"{'total':32} {sum(r.tests for r in results):5} {passed:5} {run - passed:5} "
          f"{sum(r.skipped for r in results):5} {sum(r.unfinished for r in results):5}"
          + (f"  ({100 * passed / run:.1f} % of the finished tests passed)" if run else ""))


def list_folders(module: Path) -> int:
    root = module / "test" / "conformance" / "chainsaw"
    for path in sorted(p for p in root.iterdir() if p.is_dir() and p.name != "_step-templates"):
        count = len(list(path.rglob("chainsaw-test.yaml")))
        verdict = "run" if path.name in SUPPORTED else f"left out: {LEFT_OUT.get(path.name, 'NOT CLASSIFIED')}"
        print(f"{path.name:42} {count:4}  {verdict}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folders", default=",".join(SUPPORTED),
                        help="comma-separated folders (or folder/sub paths) to run (default: every supported one)")
    parser.add_argument("--list", action="store_true", help="print each folder's test count and verdict, and exit")
    parser.add_argument("--workdir", type=Path, default=None, help="scratch directory (default: a new temporary one)")
    parser.add_argument("--cluster", type=Path, default=None,
                        help="use the control plane already up in DIR (python -m tests.cluster up DIR) and leave it up")
    parser.add_argument("--parallel", type=int, default=8, help="tests chainsaw runs at once (default: 8)")
    parser.add_argument("--assert-timeout", type=int, default=15, help="seconds an assert or error step waits (default: 15)")
    parser.add_argument("--folder-timeout", type=float, default=1800, help="seconds one folder may take (default: 1800)")
    parser.add_argument("--json", type=Path, default=None, help="write the results here as JSON")
    args = parser.parse_args(argv)

    module = setup.kyverno_module_dir()
    if args.list:
        return list_folders(module)
    folders = [f for f in args.folders.split(",") if f]
    unknown = [f for f in folders if f.split("/")[0] in LEFT_OUT]
    if unknown:
        parser.error(f"left out, not run: {', '.join(unknown)} ({'; '.join(LEFT_OUT[f.split('/')[0]] for f in unknown)})")

    from tests.cluster.control import ClusterRecord, binary, down, up

    subprocess.run([str(REPO / "tests" / "cluster" / "build")], check=True)
    chainsaw = setup.chainsaw_binary()
    qmcluster = binary()
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="qm-chainsaw-"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    tests, unloadable = setup.copy_tests(module, workdir / "tests")
    for why in unloadable:
        print(f"left out, cannot load in Kyverno's own tree: {why}")
    config = workdir / "chainsaw.yaml"
    config.write_text(yaml.safe_dump(chainsaw_config(args.assert_timeout, args.parallel)))
    reports = workdir / "reports"
    reports.mkdir(exist_ok=True)
    cluster = (args.cluster or workdir / "cluster").resolve()
    results: list[FolderResult] = []
    record: ClusterRecord | None = None
    installed: setup.Installed | None = None
    kubectl: list[str] = []
    try:
        record = ClusterRecord.read(cluster) if args.cluster else up(cluster)
        kubectl = [str(qmcluster), "kubectl", f"--kubeconfig={record.admin_kubeconfig}"]
        setup.apply_kyverno_crds(kubectl, module)
        installed = setup.install_quartermaster(record, qmcluster, workdir)
        print(f"Quartermaster serving on {installed.url} (log: {installed.log}); Kyverno {setup.kyverno_version()} "
              f"tests in {tests}", flush=True)
        env = {**os.environ, "PATH": f"{setup.kubectl_shim(qmcluster, workdir / 'bin')}:{os.environ['PATH']}",
               "KUBECONFIG": str(record.admin_kubeconfig)}
        for folder in folders:
            result = run_folder(chainsaw, tests, folder, config, reports, env, args.folder_timeout)
            results.append(result)
            print(f"{folder}: {result.tests} tests, {result.passed} passed, {result.failed} failed, "
                  f"{result.unfinished} unfinished"
                  + (f"; first failure: {result.first_failure}" if result.first_failure else ""), flush=True)
    finally:
        if installed is not None:
            setup.stop(installed, kubectl)
        if record is not None and not args.cluster:
            down(cluster)
    print_table(results)
    if args.json:
        args.json.write_text(json.dumps({"kyverno": setup.kyverno_version(), "date": time.strftime("%Y-%m-%d"),
                                         "results": [asdict(r) for r in results]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
