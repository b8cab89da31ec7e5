"""PolicyReports, Events and the report command's rendering, as pure functions."""

import json

import yaml

from tests.kube.policyreport_schema import assert_valid_report
from tests.support import pid, assert_valid_k8s
from webhook.model.results import Action, errored, failed, passed, skipped
from webhook.reports.events import event_for
from webhook.reports.policyreport import (PolicyMeta, build_report, merge_results, report_name, reports_from_entries,
                                          result_entry, same_results)
from webhook.reports.formats import render
from webhook.reports.render import rows
from webhook.reports.sink import ReportEntry, ResourceRef

POD = ResourceRef("v1", "Pod", "jdoe", "train-0", "uid-1")


def test_report_names_are_stable_valid_object_names():
    assert report_name(POD) == "pod-train-0"
    assert report_name(ResourceRef("v1", "Namespace", "", "jdoe", "")) == "namespace-jdoe"
    long = ResourceRef("v1", "Pod", "jdoe", "x" * 260, "")
    name = report_name(long)
    assert len(name) <= 253 and name.startswith("pod-") and name == report_name(long)
    assert report_name(ResourceRef("v1", "Pod", "jdoe", "y" * 260, "")) != name


def test_merge_replaces_per_rule_and_prunes_unknown_policies():
    old = [{"policy": "quota", "rule": "gpu", "result": "fail"}, {"policy": "gone", "rule": "r", "result": "pass"},
           {"policy": "quota", "rule": "storage", "result": "pass"}]
    new = [{"policy": "quota", "rule": "gpu", "result": "pass"}]
    merged = merge_results(old, new, frozenset({"quota"}))
    assert merged == [{"policy": "quota", "rule": "gpu", "result": "pass"},
                      {"policy": "quota", "rule": "storage", "result": "pass"}]
    assert same_results([dict(merged[0], timestamp={"seconds": 1, "nanos": 0})], [dict(merged[0], timestamp={"seconds": 2, "nanos": 0})])
    assert not same_results(merged, merged[:1])


def test_policy_meta_from_annotations():
    meta = PolicyMeta.of({"quartermaster.dev/events": "Fail", "policies.kyverno.io/severity": "High",
                          "policies.kyverno.io/category": "GPU"})
    assert meta == PolicyMeta("fail", "high", "GPU")
    assert PolicyMeta.of({"quartermaster.dev/events": "sometimes", "policies.kyverno.io/severity": "urgent"}) == PolicyMeta()
    assert meta.wants_event(failed(pid("p"), "r", "m").outcome) and not meta.wants_event(passed(pid("p"), "r").outcome)
    assert PolicyMeta(events="all").wants_event(skipped(pid("p"), "r").outcome)


def test_report_objects_validate_against_the_crd_schema():
    entries = [ReportEntry(POD, failed(pid("quota"), "gpu", "over", Action.AUDIT), 1700000000.25),
               ReportEntry(POD, passed(pid("quota"), "storage"), 1700000001.0),
               ReportEntry(ResourceRef("v1", "Namespace", "", "jdoe", ""), errored(pid("owners"), "owner", "no owner"), 1.0)]
    reports = reports_from_entries(entries, {pid("quota"): PolicyMeta(severity="medium")})
    assert [r["kind"] for r in reports] == ["ClusterPolicyReport", "PolicyReport"]
    for report in reports:
        assert_valid_report(report)
    pod_report = reports[1]
    assert pod_report["summary"] == {"pass": 1, "fail": 1, "warn": 0, "error": 0, "skip": 0}
    assert pod_report["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    assert pod_report["results"][0]["timestamp"] == {"seconds": 1700000000, "nanos": 250000000}
    assert pod_report["results"][0]["severity"] == "medium"
    assert "ownerReferences" not in reports[0]["metadata"]  # no uid known: nothing to own it
    rebuilt = build_report(POD, pod_report["results"], {"metadata": {"resourceVersion": "42"}})
    assert rebuilt["metadata"]["resourceVersion"] == "42"


def test_long_messages_are_cut():
    entry = result_entry(ReportEntry(POD, failed(pid("p"), "r", "x" * 5000), 1.0))
    assert len(entry["message"]) == 1024


def test_events_are_valid_and_bounded():
    event = event_for(POD, failed(pid("quota"), "gpu", "over " * 400, Action.AUDIT), "replica-a")
    assert_valid_k8s(event)
    assert event["type"] == "Warning" and event["reason"] == "PolicyViolation" and len(event["note"]) == 1024
    assert event["note"].startswith("quota/gpu fail (audit): over")
    cluster = event_for(ResourceRef("v1", "Namespace", "", "jdoe", "u"), passed(pid("p"), "r"), "replica-a")
    assert_valid_k8s(cluster)
    assert cluster["metadata"]["namespace"] == "default" and cluster["type"] == "Normal"
    assert "namespace" not in cluster["regarding"]


def test_rendering_every_format():
    entries = [ReportEntry(POD, passed(pid("quota"), "storage", "fine"), 1.0),
               ReportEntry(POD, failed(pid("quota"), "gpu", "over\nthe limit", Action.AUDIT), 1.0)]
    reports = reports_from_entries(entries)
    assert [(r.rule, r.result, r.message) for r in rows(reports)] == [("gpu", "fail", "over the limit"),
                                                                     ("storage", "pass", "fine")]
    table = render(reports, "table")
    assert "quota   gpu      Pod jdoe/train-0  fail (audit)  over the limit" in table
    assert table.endswith("1 reports: 1 pass, 1 fail, 0 warn, 0 error, 0 skip\n")
    assert json.loads(render(reports, "json"))["items"] == reports
    page = render(reports, "html", generated="now")
    # one inline script, nothing loaded from elsewhere (tests/reports/test_html_report.py drives it in Chromium)
    assert "fail (audit)" in page and page.count("<script>") == 1 and "src=" not in page and "http" not in page
    assert yaml.safe_load(render(reports, "yaml"))["items"] == reports
    assert "No policy results: no report holds any result." in render([], "html")
    assert render([], "table", reason="nothing scanned").endswith(
        "no results: nothing scanned\n0 reports: 0 pass, 0 fail, 0 warn, 0 error, 0 skip\n")


def test_same_named_policies_of_two_kinds_keep_their_own_rows():
    entries = [ReportEntry(POD, failed(pid("team", "RequireLabel"), "check", "no"), 1.0),
               ReportEntry(POD, passed(pid("team", "ProfileQuota"), "check"), 1.0)]
    (report,) = reports_from_entries(entries)
    assert sorted((r["properties"]["policyKind"], r["result"]) for r in report["results"]) == \
        [("ProfileQuota", "pass"), ("RequireLabel", "fail")]
