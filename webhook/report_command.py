"""`quartermaster report`: show policy results as a table, JSON or an HTML page.

Live (--kubeconfig/--in-cluster): the reports Quartermaster wrote in the cluster, of --report-format's API.
Standalone (otherwise): the state manifests of --state scanned against --policies, exactly as the
background scan would, shown as the reports live mode would have written (in --report-format's API).
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from webhook.commandline import (add_command, add_exception_namespace, add_report_format, configure_cli_logging,
                                 existing_path)
from webhook.model.quickinit import frozen_dataclass
from webhook.reports.report_format import DEFAULT_REPORT_FORMAT, REPORT_FORMATS, ReportFormat, format_named

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def add_report_command(commands: Any, summary: str) -> None:
    report = add_command(
        commands, "report", summary,
        "Show policy results: policy, rule, resource, result, message. With --kubeconfig/--in-cluster it reads the\n"
        "PolicyReports Quartermaster wrote; otherwise it scans the --state manifests against --policies, as the\n"
        "background scan would. The HTML page has summaries per policy and namespace, filters and search.",
        ["quartermaster report --state examples/state",
         "quartermaster report --state examples/state -o html > report.html",
         "quartermaster report --kubeconfig ~/.kube/config -n jdoe -o yaml",
         "quartermaster report --in-cluster --fail-on fail     # exit 1 when anything fails (CI, cron)",
         "quartermaster report --kubeconfig ~/.kube/config --report-format openreports   # openreports.io Reports"],
        run_report)
    report.add_argument("-n", "--namespace", default="", help="only this namespace (default: all)")
    report.add_argument("-o", "--output", choices=["table", "json", "yaml", "html"], default="table",
                        help="table (default), json or yaml (a List of the reports), or html (one self-contained page)")
    add_report_format(report, "the reports read (live) or shown (standalone)")
    report.add_argument("--fail-on", choices=["fail", "warn"], default=None,
                        help="exit 1 when a result is this bad: fail (a fail or error row) or warn (fail, error or "
                             "warn); audited results count too (default: exit 0 whatever the results)")
    report.add_argument("--policies", type=Path, default=Path("policies"), metavar="PATH",
                        help="standalone: policy directory or file (default: policies)")
    report.add_argument("--state", type=existing_path, default=None, metavar="DIR", help="standalone: manifests to scan")
    add_exception_namespace(report, "standalone, as serve is given it (default: none)")
    live = report.add_mutually_exclusive_group()
    live.add_argument("--kubeconfig", type=Path, default=None, metavar="FILE",
                      help="read the reports of this kubeconfig's cluster")
    live.add_argument("--in-cluster", action="store_true", help="read the reports with the pod's service account")


@frozen_dataclass
class Reports:
    items: list[dict[str, Any]]
    reason: str = ""  # why there is no result, when there is none


def live_reports(kubeconfig: Path | None, in_cluster: bool, namespace: str, fmt: ReportFormat) -> Reports:
    from webhook.kube.client import KubeApi
    from webhook.kube.resources import report_type
    from webhook.reports.policyreport import MANAGED_BY

    selector = ",".join(f"{k}={v}" for k, v in MANAGED_BY.items())
    api = KubeApi.connect(kubeconfig, in_cluster)
    try:
        reports = api.list(report_type(fmt, True), (5.0, 60.0), namespace=namespace, label_selector=selector).items
        if not namespace:
            reports += api.list(report_type(fmt, False), (5.0, 60.0), label_selector=selector).items
        where = f"namespace {namespace!r}" if namespace else "the cluster"
        other = next(name for name in REPORT_FORMATS if name != fmt.name)
        return Reports(reports, f"{where} has no {fmt.api_version} {fmt.kind} labelled {selector}: Quartermaster "
                                "writes them in live mode after admissions and background scans (kubectl get "
                                f"{fmt.plural}.{fmt.group} -A); if it writes the other format, --report-format {other}")
    finally:
        api.close()


def standalone_reports(policies: Path, state: Path | None, namespace: str,
                       exception_namespaces: tuple[str, ...] = (),
                       fmt: ReportFormat = DEFAULT_REPORT_FORMAT) -> Reports:
    import asyncio  # here, not at the top: cli.py imports this module to declare `report` for every command

    from webhook.app import Quartermaster, Settings
    from webhook.engine.scan import scan
    from webhook.reports.policyreport import PolicyMeta, reports_from_entries
    from webhook.reports.sink import MemoryResultSink

    qm = Quartermaster.build(Settings(policies=policies, state=state, exception_namespaces=exception_namespaces),
                             with_metrics=False)
    qm.load_policies()
    sink = MemoryResultSink()
    asyncio.run(scan(qm.store, qm.state, sink, namespace=namespace))
    metas = {pid: PolicyMeta.of(a) for pid, a in qm.store.snapshot.annotations.items()}
    return Reports(reports_from_entries(sink.entries, metas, fmt), _standalone_reason(policies, state, namespace))


def _standalone_reason(policies: Path, state: Path | None, namespace: str) -> str:
    if state is None:
        return ("no --state given: a standalone report scans the manifests of --state against --policies "
                "(try --state examples/state), or reads a cluster's reports with --kubeconfig")
    where = f" in namespace {namespace!r}" if namespace else ""
    return (f"no object of {state}{where} is one that a policy of {policies} checks "
            "(pods, PVCs and claims in Kubeflow profiles, for the default policies)")


FAILING = {"fail": frozenset({"fail", "error"}), "warn": frozenset({"fail", "error", "warn"})}


def run_report(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from webhook.reports.formats import render
    from webhook.reports.render import rows

    configure_cli_logging("quartermaster report")
    if not (args.kubeconfig or args.in_cluster) and not args.policies.exists():
        args.parser.error(f"argument --policies: {args.policies}: no such file or directory")
    fmt = format_named(args.report_format)
    try:
        if args.kubeconfig or args.in_cluster:
            found = live_reports(args.kubeconfig, args.in_cluster, args.namespace, fmt)
        else:
            found = standalone_reports(args.policies, args.state, args.namespace,
                                       tuple(args.exception_namespaces or ()), fmt)
    except Exception as exc:  # every failure here is the user's input or their cluster: say which, exit 2
        print(f"quartermaster report: {_explain(exc, fmt)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    generated = datetime.now(timezone.utc).strftime("generated %Y-%m-%d %H:%M UTC")
    (out or sys.stdout).write(render(found.items, args.output, generated=generated, reason=found.reason))
    if args.fail_on:
        bad = [r for r in rows(found.items) if r.result in FAILING[args.fail_on]]
        if bad:
            print(f"quartermaster report: {len(bad)} results at or above {args.fail_on!r} (--fail-on)", file=sys.stderr)
            return EXIT_FAILED
    return EXIT_OK


def _explain(exc: Exception, fmt: ReportFormat) -> str:
    from webhook.app import PolicyLoadFailed
    from webhook.kube.client import explain_error
    from webhook.state.memory import StateSeedError

    if isinstance(exc, PolicyLoadFailed):
        return f"policies refused:\n{exc}"
    if isinstance(exc, StateSeedError):
        return str(exc)
    return explain_error(exc, f"{fmt.api_version} {fmt.kind}s")
