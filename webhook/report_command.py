"""`quartermaster report`: show policy results as a table, JSON or an HTML page.

Live (--kubeconfig/--in-cluster): the PolicyReports Quartermaster wrote in the cluster.
Standalone (otherwise): the state manifests of --state scanned against --policies, exactly as the
background scan would, shown as the reports live mode would have written.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

EXIT_OK, EXIT_BAD_INPUT = 0, 2


def add_report_command(commands: Any) -> None:
    report = commands.add_parser(
        "report", help="show policy results (PolicyReports) as a table, JSON or HTML",
        description="Show policy results: policy, rule, resource, result, message. With --kubeconfig/--in-cluster "
                    "it reads the PolicyReports Quartermaster wrote; otherwise it scans the --state manifests "
                    "against --policies, as the background scan would.")
    report.add_argument("-n", "--namespace", default="", help="only this namespace (default: all)")
    report.add_argument("-o", "--output", choices=["table", "json", "html"], default="table",
                        help="table (default), json (a List of PolicyReports) or html (one page)")
    report.add_argument("--policies", type=Path, default=Path("policies"), help="standalone: policies (default: policies)")
    report.add_argument("--state", type=Path, default=None, help="standalone: manifests to scan")
    live = report.add_mutually_exclusive_group()
    live.add_argument("--kubeconfig", type=Path, default=None, help="read the reports of this kubeconfig's cluster")
    live.add_argument("--in-cluster", action="store_true", help="read the reports with the pod's service account")


def live_reports(kubeconfig: Path | None, in_cluster: bool, namespace: str) -> list[dict[str, Any]]:
    from webhook.kube.client import KubeApi
    from webhook.kube.resources import CLUSTER_POLICY_REPORTS, POLICY_REPORTS
    from webhook.reports.policyreport import MANAGED_BY

    selector = ",".join(f"{k}={v}" for k, v in MANAGED_BY.items())
    api = KubeApi.connect(kubeconfig, in_cluster)
    try:
        reports = api.list(POLICY_REPORTS, (5.0, 60.0), namespace=namespace, label_selector=selector).items
        if not namespace:
            reports += api.list(CLUSTER_POLICY_REPORTS, (5.0, 60.0), label_selector=selector).items
        return reports
    finally:
        api.close()


def standalone_reports(policies: Path, state: Path | None, namespace: str) -> list[dict[str, Any]]:
    from webhook.app import Quartermaster, Settings
    from webhook.engine.scan import scan
    from webhook.reports.policyreport import PolicyMeta, reports_from_entries
    from webhook.reports.sink import MemoryResultSink

    qm = Quartermaster.build(Settings(policies=policies, state=state))
    qm.load_policies()
    sink = MemoryResultSink()
    asyncio.run(scan(qm.store, qm.state, sink, namespace=namespace))
    metas = {pid: PolicyMeta.of(a) for pid, a in qm.store.snapshot.annotations.items()}
    return reports_from_entries(sink.entries, metas)


def run_report(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from webhook.reports.render import render

    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    try:
        if args.kubeconfig or args.in_cluster:
            reports = live_reports(args.kubeconfig, args.in_cluster, args.namespace)
        else:
            reports = standalone_reports(args.policies, args.state, args.namespace)
    except Exception as exc:  # every failure here is the user's input or their cluster: say which, exit 2
        print(f"quartermaster report: {_explain(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    generated = datetime.now(timezone.utc).strftime("generated %Y-%m-%d %H:%M UTC")
    (out or sys.stdout).write(render(reports, args.output, generated=generated))
    return EXIT_OK


def _explain(exc: Exception) -> str:
    from webhook.app import PolicyLoadFailed
    from webhook.kube.client import explain_error
    from webhook.state.memory import StateSeedError

    if isinstance(exc, PolicyLoadFailed):
        return f"policies refused:\n{exc}"
    if isinstance(exc, StateSeedError):
        return str(exc)
    return explain_error(exc)
