"""`quartermaster apply` as Kyverno users run it: without --state, with machine-readable output
(-o json, --policy-report), --detailed-results and --audit-warn."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import yaml

from tests.kube.policyreport_schema import assert_valid_report
from tests.support import REPO, assert_valid_k8s
from webhook.cli import main

POLICIES, STATE = str(REPO / "policies"), str(REPO / "examples" / "state")
GPU_POD = str(REPO / "examples" / "gpu-pod.yaml")


def two_gpu_pods(tmp_path):
    pod = yaml.safe_load((REPO / "examples" / "gpu-pod.yaml").read_text())
    second = json.loads(json.dumps(pod))
    second["metadata"]["name"] = "train-2"
    path = tmp_path / "pods.yaml"
    path.write_text(yaml.safe_dump_all([pod, second]))
    return str(path)


def test_without_state_each_resource_is_a_skip_with_its_reason():
    run = subprocess.run([sys.executable, "-m", "webhook", "apply", "--policies", POLICIES, GPU_POD],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0
    (pod,) = yaml.safe_load_all(run.stdout)
    assert pod == yaml.safe_load((REPO / "examples" / "gpu-pod.yaml").read_text())  # nothing matched: unchanged
    lines = run.stderr.splitlines()
    assert lines[0].startswith("quartermaster apply: notice: no --state given, so no namespace is known")
    assert lines[2].split()[:6] == ["Pod", "jdoe/train", "-", "namespace", "skip", "namespace"]
    assert lines[-1] == "1 admitted, 0 denied, 0 objects to create; 0 pass, 0 fail, 0 warn, 0 error, 1 skip"


def test_unknown_namespace_and_default_namespace(tmp_path, capsys):
    pod = yaml.safe_load((REPO / "examples" / "gpu-pod.yaml").read_text())
    pod["metadata"].pop("namespace")
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(pod))
    assert main(["apply", "--policies", POLICIES, "--state", str(tmp_path), str(path)]) == 0
    err = capsys.readouterr().err
    assert f"notice: namespace 'default' is not in {tmp_path}" in err and "Pod default/train" in err


def test_json_output_and_policy_report(capsys):
    assert main(["apply", "--policies", POLICIES, "--state", STATE, "-o", "json", GPU_POD]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [d["kind"] for d in listed["items"]] == ["Pod", "ResourceClaimTemplate"]
    for item in listed["items"]:
        assert_valid_k8s(item)
    assert main(["apply", "--policies", POLICIES, "--state", STATE, "--policy-report", GPU_POD]) == 0
    out, err = capsys.readouterr()
    report = yaml.safe_load(out)
    assert_valid_report(report)
    assert report["kind"] == "ClusterPolicyReport" and report["summary"]["pass"] == len(report["results"]) >= 2
    assert {r["resources"][0]["name"] for r in report["results"]} == {"train"}
    assert "RESOURCE" not in err  # nothing but passes: no table rows without --detailed-results
    assert main(["apply", "--policies", POLICIES, "--state", STATE, "--detailed-results", GPU_POD]) == 0
    assert "profile-quota" in capsys.readouterr().err


def test_denied_and_audited(tmp_path, capsys):
    pods = two_gpu_pods(tmp_path)
    assert main(["apply", "--policies", POLICIES, "--state", STATE, "--policy-report", pods]) == 1
    out, err = capsys.readouterr()
    report = yaml.safe_load(out)
    assert_valid_report(report)
    assert report["summary"]["fail"] == 1 and "DENIED Pod jdoe/train-2" in err
    audit = tmp_path / "policies"
    shutil.copytree(REPO / "policies", audit)
    quota = audit / "profile-quota.yaml"
    quota.write_text(quota.read_text().replace("mode: Enforce", "mode: Audit"))
    assert "mode: Audit" in quota.read_text()
    assert main(["apply", "--policies", str(audit), "--state", STATE, pods]) == 0
    assert "fail (audit)" in capsys.readouterr().err
    assert main(["apply", "--policies", str(audit), "--state", STATE, "--audit-warn", pods]) == 1
    assert capsys.readouterr().err.endswith("quartermaster apply: 1 audited failures (--audit-warn)\n")


def test_policy_report_as_an_openreports_cluster_report(tmp_path, capsys):
    """--report-format openreports: the same results as one openreports.io/v1alpha1 ClusterReport, with its own
    `source`; each result names its resource, and the format changes nothing else."""
    pods = two_gpu_pods(tmp_path)
    assert main(["apply", "--policies", POLICIES, "--state", STATE, "--policy-report", pods]) == 1
    wg = yaml.safe_load(capsys.readouterr().out)
    assert main(["apply", "--policies", POLICIES, "--state", STATE, "--policy-report", "--report-format",
                 "openreports", "-o", "json", pods]) == 1
    report = json.loads(capsys.readouterr().out)
    assert_valid_report(report)
    assert (report["apiVersion"], report["kind"], report["source"]) == ("openreports.io/v1alpha1", "ClusterReport",
                                                                       "quartermaster")
    assert report["summary"] == wg["summary"] and report["summary"]["fail"] == 1
    assert [(r["rule"], r["result"], r["resources"]) for r in report["results"]] == \
        [(r["rule"], r["result"], r["resources"]) for r in wg["results"]]
    assert all(r["source"] == "quartermaster" for r in report["results"])
