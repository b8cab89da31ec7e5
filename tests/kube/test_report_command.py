"""`quartermaster report`: live PolicyReports or standalone results, as a table, JSON or HTML;
and `quartermaster serve --kubeconfig` as a user runs it."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.kube.objects import namespace, pod
from tests.kube.policyreport_schema import assert_valid_report
from tests.support import pid, REPO, free_port
from webhook.cli import main
from webhook.model.results import Action, failed, passed
from webhook.reports.policyreport import build_report, result_entry
from webhook.reports.report_format import OPENREPORTS, WGPOLICY
from webhook.reports.sink import ReportEntry, ResourceRef


def stored_report(kind, ns, name, *results, fmt=WGPOLICY):
    ref = ResourceRef("v1", kind, ns, name, f"uid-{name}")
    return build_report(ref, [result_entry(ReportEntry(ref, r, 1_700_000_000.5)) for r in results], fmt=fmt)


@pytest.fixture
def reports_in_cluster(apiserver):
    apiserver.put(stored_report("Pod", "jdoe", "train", failed(pid("profile-quota"), "gpu-quota", "GPU quota exceeded <b>now</b>"),
                                passed(pid("profile-quota"), "storage-quota")))
    apiserver.put(stored_report("PersistentVolumeClaim", "ml-team", "data",
                                failed(pid("labels"), "team", "add the label team", Action.AUDIT)))
    apiserver.put(stored_report("Namespace", "", "jdoe", passed(pid("profiles"), "owner")))
    foreign = stored_report("Pod", "jdoe", "other", failed(pid("kyverno-policy"), "r", "not ours"))
    foreign["metadata"]["name"] = "kyverno-report"
    foreign["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "kyverno"}
    apiserver.put(foreign)


def test_live_table(apiserver, kubeconfig, reports_in_cluster, capsys):
    assert main(["report", "--kubeconfig", str(kubeconfig)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["POLICY", "RULE", "RESOURCE", "RESULT", "MESSAGE"]
    body = "\n".join(lines)
    assert "profile-quota  gpu-quota" in body and "Pod jdoe/train" in body
    assert "fail (audit)" in body and "Namespace jdoe" in body
    assert "kyverno-policy" not in body  # only Quartermaster's reports
    assert lines[1].split()[4] == "fail"  # failures first
    assert lines[-1] == "3 reports: 2 pass, 2 fail, 0 warn, 0 error, 0 skip"


def test_live_namespace_filter_and_json(apiserver, kubeconfig, reports_in_cluster, capsys):
    assert main(["report", "--kubeconfig", str(kubeconfig), "-n", "ml-team", "-o", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["kind"] == "List" and [r["scope"]["name"] for r in listed["items"]] == ["data"]
    for report in listed["items"]:
        assert_valid_report(report)


def test_live_html_is_one_escaped_page(apiserver, kubeconfig, reports_in_cluster, capsys):
    assert main(["report", "--kubeconfig", str(kubeconfig), "-o", "html"]) == 0
    page = capsys.readouterr().out
    assert page.startswith("<!DOCTYPE html>") and page.count("<tr data-result=") == 4
    assert "GPU quota exceeded &lt;b&gt;now&lt;/b&gt;" in page and "<b>now</b>" not in page
    assert '<span class="badge fail">fail</span>' in page and '<span class="badge fail">fail (audit)</span>' in page


def test_live_yaml_and_fail_on(apiserver, kubeconfig, reports_in_cluster, capsys):
    assert main(["report", "--kubeconfig", str(kubeconfig), "-o", "yaml", "--fail-on", "fail"]) == 1
    captured = capsys.readouterr()
    listed = yaml.safe_load(captured.out)
    assert listed["kind"] == "List" and len(listed["items"]) == 3
    for report in listed["items"]:
        assert_valid_report(report)
    assert captured.err == "quartermaster report: 2 results at or above 'fail' (--fail-on)\n"
    assert main(["report", "--kubeconfig", str(kubeconfig), "-n", "jdoe", "--fail-on", "fail"]) == 1
    capsys.readouterr()
    assert main(["report", "--kubeconfig", str(kubeconfig), "-n", "nobody", "--fail-on", "warn"]) == 0
    out = capsys.readouterr().out
    assert "no results: namespace 'nobody' has no wgpolicyk8s.io/v1alpha2 PolicyReport labelled app.kubernetes.io/managed-by=quartermaster" in out


def test_standalone_scans_the_state(tmp_path, capsys):
    state = tmp_path / "state"
    state.mkdir()
    (state / "objects.yaml").write_text(yaml.safe_dump_all(
        [namespace("jdoe"), pod("a", gpus=1), pod("b", gpus=1), namespace("ml-team", klass="team"),
         pod("c", ns="ml-team", gpus=1)]))
    policies = REPO / "policies"
    assert main(["report", "--policies", str(policies), "--state", str(state), "-o", "json"]) == 0
    reports = json.loads(capsys.readouterr().out)["items"]
    for report in reports:
        assert_valid_report(report)
    by_pod = {r["scope"]["name"]: {x["rule"]: x["result"] for x in r["results"]} for r in reports}
    # two GPUs, limit one: the excess is blamed once, on the newer pod (same age: by name)
    assert by_pod["a"]["gpu-quota"] == "pass" and by_pod["b"]["gpu-quota"] == "fail"
    assert by_pod["c"]["gpu-quota"] == "pass"  # a team profile: eight
    assert main(["report", "--policies", str(policies), "--state", str(state), "-n", "ml-team"]) == 0
    table = capsys.readouterr().out
    assert "Pod ml-team/c" in table and "jdoe" not in table


def test_openreports_live_and_standalone(apiserver, kubeconfig, reports_in_cluster, tmp_path, capsys):
    """--report-format openreports reads the cluster's openreports.io Reports and ClusterReports (not the
    PolicyReports beside them), and a standalone scan prints Reports."""
    apiserver.put(stored_report("Pod", "jdoe", "serve", failed(pid("profile-quota"), "gpu-quota", "over"), fmt=OPENREPORTS))
    apiserver.put(stored_report("Namespace", "", "ml-team", passed(pid("profiles"), "owner"), fmt=OPENREPORTS))
    assert main(["report", "--kubeconfig", str(kubeconfig), "--report-format", "openreports", "-o", "yaml"]) == 0
    listed = yaml.safe_load(capsys.readouterr().out)["items"]
    assert [(r["kind"], r["scope"]["name"]) for r in listed] == [("Report", "serve"), ("ClusterReport", "ml-team")]
    for report in listed:
        assert_valid_report(report)
    assert main(["report", "--kubeconfig", str(kubeconfig), "--report-format", "openreports", "-n", "ml-team"]) == 0
    assert "has no openreports.io/v1alpha1 Report labelled" in capsys.readouterr().out
    apiserver.absent.add(("openreports.io", "v1alpha1", "reports"))
    assert main(["report", "--kubeconfig", str(kubeconfig), "--report-format", "openreports"]) == 2
    assert "does not serve openreports.io/v1alpha1 Reports (is the CRD installed?)" in capsys.readouterr().err
    state = tmp_path / "state"
    state.mkdir()
    (state / "objects.yaml").write_text(yaml.safe_dump_all([namespace("jdoe"), pod("a", gpus=1), pod("b", gpus=1)]))
    assert main(["report", "--policies", str(REPO / "policies"), "--state", str(state), "--report-format",
                 "openreports", "-o", "json"]) == 0
    reports = json.loads(capsys.readouterr().out)["items"]
    assert reports and {r["apiVersion"] for r in reports} == {"openreports.io/v1alpha1"}
    for report in reports:
        assert_valid_report(report)
        assert report["source"] == "quartermaster"


def test_errors_exit_2_with_a_reason(apiserver, kubeconfig, tmp_path, capsys):
    assert main(["report", "--kubeconfig", str(tmp_path / "missing")]) == 2
    assert "cannot use kubeconfig" in capsys.readouterr().err
    apiserver.absent.add(("wgpolicyk8s.io", "v1alpha2", "policyreports"))
    assert main(["report", "--kubeconfig", str(kubeconfig)]) == 2
    assert "is the CRD installed?" in capsys.readouterr().err
    closed = apiserver.kubeconfig(tmp_path / "closed")
    closed.write_text(closed.read_text().replace(f":{apiserver.port}", f":{free_port()}"))
    assert main(["report", "--kubeconfig", str(closed)]) == 2
    assert "cannot reach the cluster" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:  # argparse's error: the report command's own usage, exit 2
        main(["report", "--policies", str(tmp_path / "nope")])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.startswith("usage: quartermaster report")
    assert err.endswith(f"quartermaster report: error: argument --policies: {tmp_path / 'nope'}: no such file or directory\n")


def _get(url: str) -> tuple[int, dict]:
    import ssl
    import urllib.error
    import urllib.request

    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_serve_live_subprocess(apiserver, kubeconfig, tmp_path):
    apiserver.put(namespace("jdoe"))
    apiserver.put(pod("a", gpus=1))
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "webhook", "serve", "--policies", str(REPO / "policies"),
                             "--cert-dir", str(tmp_path / "certs"), "--host", "127.0.0.1", "--port", str(port),
                             "--kubeconfig", str(kubeconfig), "--namespace", "quartermaster",
                             "--report-format", "openreports"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                status, body = _get(f"https://127.0.0.1:{port}/readyz")
                if status == 200:
                    break
            except OSError:
                pass
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "live server did not become ready"
            time.sleep(0.2)
        assert body["stateSynced"] is True and body["stateDetails"]["Namespace"]["synced"] is True
        # the replica took the Lease and keeps a ResourceQuota for the profile
        while apiserver.get("v1", "ResourceQuota", "jdoe", "quartermaster-profile-quota") is None:
            assert time.monotonic() < deadline, "no backstop ResourceQuota"
            time.sleep(0.2)
        # its first background scan reports the pod in the format asked for (--report-format openreports)
        while (scanned := apiserver.get("openreports.io/v1alpha1", "Report", "jdoe", "pod-a")) is None:
            assert time.monotonic() < deadline, "no openreports.io Report of the scanned pod"
            time.sleep(0.2)
        assert_valid_report(scanned)
        assert scanned["source"] == "quartermaster" and not apiserver.list("wgpolicyk8s.io/v1alpha2", "PolicyReport")
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()[-2000:]
    assert apiserver.get("coordination.k8s.io/v1", "Lease", "quartermaster",
                         "quartermaster-background")["spec"]["holderIdentity"] == ""  # released on the way out


def test_serve_refuses_an_unusable_kubeconfig(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "webhook", "serve", "--policies", str(REPO / "policies"),
                           "--cert-dir", str(tmp_path / "certs"), "--port", str(free_port()),
                           "--kubeconfig", str(tmp_path / "missing.yaml")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: quartermaster serve")  # the serve command's own usage
    assert f"error: argument --kubeconfig: {tmp_path / 'missing.yaml'}: no such file or directory" in proc.stderr
