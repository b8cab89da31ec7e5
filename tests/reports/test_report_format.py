"""The report formats: one table row each, named alike by the command line and the builder; the default is
the format existing installs read."""

import pytest

from tests.kube.policyreport_schema import assert_valid_report
from webhook.commandline import REPORT_FORMAT_NAMES
from webhook.model.results import passed
from webhook.reports.policyreport import build_report, reports_from_entries
from webhook.reports.report_format import DEFAULT_REPORT_FORMAT, OPENREPORTS, REPORT_FORMATS, WGPOLICY, format_named
from webhook.reports.sink import ReportEntry, ResourceRef
from tests.support import pid


def test_the_command_line_offers_every_format_and_the_default_first():
    assert REPORT_FORMAT_NAMES == tuple(REPORT_FORMATS) and REPORT_FORMAT_NAMES[0] == DEFAULT_REPORT_FORMAT.name
    assert DEFAULT_REPORT_FORMAT is WGPOLICY  # existing installs: Kyverno's default, every Policy Reporter
    assert format_named("openreports") is OPENREPORTS
    with pytest.raises(ValueError, match="wgpolicyk8s, openreports"):
        format_named("openreport")


@pytest.mark.parametrize("fmt", [WGPOLICY, OPENREPORTS], ids=lambda f: f.name)
def test_one_builder_differs_only_in_the_tabled_fields(fmt):
    pod, namespace = ResourceRef("v1", "Pod", "jdoe", "a", "u1"), ResourceRef("v1", "Namespace", "", "jdoe", "u2")
    entries = [ReportEntry(ref, passed(pid("quota"), "gpu-quota"), 1_700_000_000.0) for ref in (pod, namespace)]
    reports = reports_from_entries(entries, fmt=fmt)
    assert [(r["apiVersion"], r["kind"]) for r in reports] == [(fmt.api_version, fmt.cluster_kind),
                                                                (fmt.api_version, fmt.kind)]
    baseline = reports_from_entries(entries)
    for report, other in zip(reports, baseline):
        assert_valid_report(report)
        assert ("source" in report) is fmt.report_source
        extra = {"apiVersion", "kind", "source"}
        assert {k: v for k, v in report.items() if k not in extra} == {k: v for k, v in other.items() if k not in extra}
    kept = build_report(pod, [], {"metadata": {"resourceVersion": "7"}}, fmt)
    assert kept["metadata"]["resourceVersion"] == "7" and kept["kind"] == fmt.kind
