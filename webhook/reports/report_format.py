"""The two report APIs Quartermaster can write: one table row each, read by the one report builder.

`wgpolicyk8s.io/v1alpha2` (PolicyReport, ClusterPolicyReport) is the Policy WG's format that Kyverno
writes by default and every Policy Reporter reads. `openreports.io/v1alpha1` (Report, ClusterReport)
is its successor (github.com/openreports/reports-api): the same results, summary and scope, plus a
report-level `source` (and an optional `configuration` we do not write). Kyverno 1.15+ writes it with
--openreportsEnabled; Policy Reporter 3.2+ reads it.
"""

from __future__ import annotations

from webhook.model.quickinit import frozen_dataclass


@frozen_dataclass
class ReportFormat:
    name: str  # what --report-format and the chart's policyReports.format say
    group: str
    version: str
    kind: str  # a namespaced resource's report
    cluster_kind: str  # a cluster-scoped resource's report (Namespace, Profile), and `apply --policy-report`'s
    plural: str
    cluster_plural: str
    report_source: bool  # the report itself names its producer (`source`), beside each result's

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    def kind_for(self, namespaced: bool) -> str:
        return self.kind if namespaced else self.cluster_kind

    def plural_for(self, namespaced: bool) -> str:
        return self.plural if namespaced else self.cluster_plural


WGPOLICY = ReportFormat("wgpolicyk8s", "wgpolicyk8s.io", "v1alpha2", "PolicyReport", "ClusterPolicyReport",
                        "policyreports", "clusterpolicyreports", report_source=False)
OPENREPORTS = ReportFormat("openreports", "openreports.io", "v1alpha1", "Report", "ClusterReport",
                           "reports", "clusterreports", report_source=True)
REPORT_FORMATS = {f.name: f for f in (WGPOLICY, OPENREPORTS)}
# existing installs read wgpolicyk8s (Kyverno's default, every Policy Reporter); docs/live.md says when to switch
DEFAULT_REPORT_FORMAT = WGPOLICY


def format_named(name: str) -> ReportFormat:
    """The format of this name; a ValueError that lists the names otherwise."""
    found = REPORT_FORMATS.get(name)
    if found is None:
        raise ValueError(f"unknown report format {name!r}: one of {', '.join(REPORT_FORMATS)}")
    return found
