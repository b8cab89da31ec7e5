"""Live-mode knobs. Defaults follow client-go's informers and Kyverno's report controller."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from webhook.model.quickinit import frozen_dataclass
from webhook.reports.report_format import DEFAULT_REPORT_FORMAT, ReportFormat, format_named


def default_identity() -> str:
    """The pod name in a Deployment (downward API), else the host name: unique per replica."""
    return os.environ.get("POD_NAME") or socket.gethostname()


@frozen_dataclass
class LiveSettings:
    kubeconfig: Path | None = None
    in_cluster: bool = False
    namespace: str = "quartermaster"  # the webhook's own namespace: where its Lease lives
    identity: str = ""  # this replica, for the Lease and Events; default_identity() when empty
    # --- API calls ---
    connect_timeout: float = 3.0
    api_timeout: float = 10.0  # one ordinary request (not an admission-time create: that has its own deadline)
    list_timeout: float = 60.0  # a full list of a large cluster's pods can take a while
    list_page_size: int = 500  # objects per list request, as client-go's reflector pages its lists
    # --- informers ---
    watch_seconds: int = 300  # server-side watch timeout, stretched by up to 2x at random (client-go does the same)
    watch_idle_seconds: float = 120.0  # a watch silent this long is reconnected (bookmarks come about every minute)
    stall_seconds: float = 360.0  # no list, event, bookmark or clean watch end for this long: the watch is stalled
    backoff_initial: float = 0.5
    backoff_max: float = 30.0
    absent_recheck_seconds: float = 300.0  # an optional CRD (Kubeflow Profile) that was absent: look again
    # --- admission-time creates, and the quota ledger's reads and writes ---
    create_retry_initial: float = 0.05
    ledger_name: str = "quartermaster-quota-ledger"  # ConfigMap <ledger_name>.<profile> in `namespace`
    # --- reports and events ---
    report_queue: int = 10_000  # resources whose results wait to be written; results of more are dropped and counted
    report_batch: int = 500  # waiting resources looked at per batch
    report_interval: float = 2.0  # gather submissions this long before writing a batch
    report_concurrency: int = 4  # reports written at once
    report_resolve_seconds: float = 30.0  # wait this long for a new resource to show in the informer
    report_attempts: int = 5  # a report write that keeps failing is dropped (and counted) after this many
    events_per_batch: int = 100  # Events are for people: a flood is cut here, the reports keep everything
    # per namespace, so that one profile's flood (of denials, of audit failures) cannot crowd out the others
    # or fill etcd: resources waiting to be written, Events and new reports per window; more are dropped and counted
    report_pending_per_namespace: int = 1_000
    events_per_namespace: int = 50
    reports_per_namespace: int = 500
    report_window_seconds: float = 600.0
    report_message_bytes: int = 1_024  # a result message longer than this is cut (reports are for reading)
    report_format: ReportFormat = DEFAULT_REPORT_FORMAT  # wgpolicyk8s.io PolicyReports or openreports.io Reports
    # --- background work (one replica: the Lease holder) ---
    scan_interval: float = 3600.0  # 0: scan only when the policies change
    lease_name: str = "quartermaster-background"
    lease_seconds: float = 15.0
    lease_renew_seconds: float = 10.0
    lease_retry_seconds: float = 2.0
    backstop: bool = True
    backstop_name: str = "quartermaster-profile-quota"
    backstop_interval: float = 60.0
    # API groups whose policy kinds are read as cluster objects (Kyverno's only when Kyverno does not run)
    policy_object_groups: tuple[str, ...] = ("quartermaster.dev",)

    @property
    def who(self) -> str:
        return self.identity or default_identity()


class LiveSetupError(Exception):
    """Live mode cannot start: a kubeconfig or service account that cannot be used."""


def live_settings(args: Any, namespace: str) -> LiveSettings:
    """From `serve`'s arguments: --kubeconfig/--in-cluster, --scan-interval, --no-quota-backstop, --report-format."""
    groups = tuple(g for g in str(args.policy_objects).split(",") if g and g != "none")
    return LiveSettings(kubeconfig=args.kubeconfig, in_cluster=bool(args.in_cluster), namespace=namespace,
                        scan_interval=float(args.scan_interval), backstop=not args.no_quota_backstop,
                        policy_object_groups=groups, report_format=format_named(args.report_format))
