"""`quartermaster apply`: its options (ours, and `kyverno apply`'s spellings) and the run; the admission itself is
webhook.apply's, the output webhook.apply_output's (both imported when it runs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from webhook.commandline import (add_cel_evaluation, add_command, add_exception_namespace, add_report_format,
                                 configure_cli_logging,
                                 existing_path)

EXIT_OK, EXIT_DENIED, EXIT_BAD_INPUT = 0, 1, 2


def add_apply_command(commands: Any, summary: str) -> None:
    apply = add_command(
        commands, "apply", summary,
        "Run admission offline. Standard output: each admitted resource as mutated, then every object the\n"
        "policies would create (YAML, or a JSON List), or with --policy-report one ClusterPolicyReport of every\n"
        "result. A table of failures, warnings and skips (every result with --detailed-results) goes to standard\n"
        "error. A resource without a namespace is in `default`; one whose namespace is not in --state (nor in a\n"
        "values file's namespaceSelector) is reported as a skip, since namespace-selecting policies cannot match it.\n"
        "Kyverno's values file (-f) and --set give policies their variables, as kyverno apply does; --exception\n"
        "adds PolicyExceptions, honoured under the same rules as those in --policies (--exception-namespace).\n"
        "Exit 0 admitted, 1 denied (or, with --audit-warn, an audited failure), 2 bad input.",
        ["quartermaster apply --policies policies --state examples/state examples/gpu-pod.yaml",
         "kubectl get pod train -o yaml | quartermaster apply --policies policies --state examples/state -",
         "quartermaster apply --policies policies --state examples/state --policy-report -o json examples/*-pod.yaml",
         "quartermaster apply --policies policies --state examples/state --audit-warn --detailed-results examples/notebook-pod.yaml",
         "quartermaster apply --policies policies --kubeconfig ~/.kube/config examples/gpu-pod.yaml   # a live cluster's state",
         "quartermaster apply -p examples/kyverno/notebook-home/notebook-home.yaml "
         "-f examples/kyverno/notebook-home/.kyverno-test/values.yaml --set owner=asmith@example.org "
         "-r examples/notebook-pod.yaml   # Kyverno's values file and --set",
         "quartermaster apply -p examples/kyverno/notebook-home/notebook-home.yaml --state examples/state "
         "--exception examples/exceptions/notebook-home-jdoe.yaml --exception-namespace jdoe examples/notebook-pod.yaml"],
        run_apply_command)
    apply.add_argument("--policies", "-p", "--policy", dest="policies", type=existing_path, required=True,
                       metavar="PATH", help="policy directory or file (-p/--policy: Kyverno's spelling)")
    source = apply.add_mutually_exclusive_group()
    source.add_argument("--state", type=existing_path, default=None, metavar="DIR",
                        help="manifests of the cluster state (namespaces, profiles, pods, PVCs, claims)")
    source.add_argument("--kubeconfig", type=existing_path, default=None, metavar="FILE",
                        help="read the cluster state once from this kubeconfig's cluster (nothing is written there)")
    source.add_argument("--in-cluster", action="store_true", help="read the cluster state with the pod's service account")
    add_exception_namespace(apply, "default: none is honoured, as in serve")
    apply.add_argument("-e", "--exception", "--exceptions", dest="exception_files", action="extend", default=[],
                       type=_existing_files, metavar="FILE",
                       help="PolicyExceptions to load beside the policies, as kyverno apply takes them (repeatable or "
                            "FILE,FILE); honoured only from the --exception-namespace namespaces, as in --policies")
    apply.add_argument("-f", "--values-file", type=existing_path, default=None, metavar="FILE",
                       help="a Kyverno values file (cli.kyverno.io/v1alpha1 Value): globalValues, policies[].rules[] and "
                            "resources[] values, namespaceSelector labels, subresources, as kyverno apply reads it")
    apply.add_argument("-s", "--set", dest="variables", action="append", default=[], type=_key_values,
                       metavar="KEY=VALUE[,KEY=VALUE]",
                       help="a variable for every policy (request.operation=UPDATE, a context entry's name), over "
                            "the values file's; repeatable")
    add_cel_evaluation(apply)
    apply.add_argument("--allow-empty", action="store_true", help="no warning when --policies holds no policy")
    apply.add_argument("-o", "--output", choices=["yaml", "json"], default="yaml",
                       help="format of standard output: yaml documents (default) or one json List")
    apply.add_argument("--policy-report", action="store_true",
                       help="print a ClusterPolicyReport (a ClusterReport with --report-format openreports) of every "
                            "result instead of the resources")
    add_report_format(apply, "with --policy-report, the report printed")
    apply.add_argument("--detailed-results", action="store_true", help="the table lists passing results too")
    apply.add_argument("--audit-warn", action="store_true",
                       help="exit 1 also when a failure was only audited (admitted with a warning)")
    apply.add_argument("--user", default="", metavar="NAME",
                       help="the requester's user name, as the API server would authenticate it (a notebook pod: "
                            "system:serviceaccount:kube-system:statefulset-controller); default quartermaster-apply")
    apply.add_argument("files", nargs="*", metavar="FILE", help="manifests to admit ('-' reads standard input)")
    apply.add_argument("-r", "--resource", dest="resources", action="append", default=[], metavar="FILE",
                       help="a manifest to admit, as kyverno apply spells it (repeatable; beside FILE...)")


def _existing_files(text: str) -> list[Path]:
    return [existing_path(name) for name in text.split(",") if name]


def _key_values(text: str) -> dict[str, str]:
    from webhook.policy.cli_values import ValuesError, parse_set

    try:
        return parse_set([text])
    except ValuesError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--set ")) from None


def _values(args: argparse.Namespace) -> Any:
    """The values of -f and --set (--set over the file's), or None when neither is given."""
    from webhook.policy.cli_values import Values, read_values_file

    if args.values_file is None and not args.variables:
        return None
    values = read_values_file(args.values_file) if args.values_file is not None else Values()
    return values.with_variables({key: value for given in args.variables for key, value in given.items()})


def run_apply_command(args: argparse.Namespace) -> int:
    import asyncio

    if not (args.files or args.resources):
        args.parser.error("give the manifests to admit: FILE... or -r/--resource FILE ('-' reads standard input)")

    from webhook.app import PolicyLoadFailed, Quartermaster, Settings
    from webhook.apply import BadInput, read_resources, run_apply
    from webhook.apply_output import audited_failures, write_documents, write_policy_report, write_table
    from webhook.reports.report_format import format_named
    from webhook.engine.offline import OFFLINE_USER
    from webhook.model.review import UserInfo
    from webhook.policy.cli_values import ValuesError
    from webhook.policy.family import CelEvaluation
    from webhook.state.memory import StateSeedError

    configure_cli_logging("quartermaster apply")
    user = UserInfo(args.user, OFFLINE_USER.groups) if args.user else OFFLINE_USER
    try:
        resources = read_resources([*args.files, *args.resources])
        qm = Quartermaster.build(Settings(policies=args.policies, state=args.state,
                                          exception_namespaces=tuple(args.exception_namespaces or ()),
                                          cel_evaluation=CelEvaluation(args.cel_evaluation),
                                          exception_files=tuple(args.exception_files), values=_values(args)),
                                 state=_cluster_state(args),
                                 with_metrics=False)
        loaded = qm.load_policies()
        if not loaded.policies and not args.allow_empty:
            print(f"quartermaster apply: warning: no policy in {args.policies}: every resource is admitted unchanged "
                  "(--allow-empty to silence)", file=sys.stderr)
        report = asyncio.run(run_apply(qm, resources, user))
    except (BadInput, StateSeedError, ValuesError, ClusterUnreadable) as exc:
        print(f"quartermaster apply: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except PolicyLoadFailed as exc:
        print(f"quartermaster apply: policies refused:\n{exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    _notice_unknown_namespaces(args, sorted({skip.namespace for skip in report.skips}))
    if args.policy_report:
        write_policy_report(report, sys.stdout, args.output, format_named(args.report_format))
    else:
        write_documents(report, sys.stdout, args.output)
    write_table(report, sys.stderr, detailed=args.detailed_results)
    if report.denials:
        return EXIT_DENIED
    audited = audited_failures(report)
    if args.audit_warn and audited:
        print(f"quartermaster apply: {len(audited)} audited failures (--audit-warn)", file=sys.stderr)
        return EXIT_DENIED
    return EXIT_OK


class ClusterUnreadable(Exception):
    pass


def _cluster_state(args: argparse.Namespace) -> Any:
    """--kubeconfig/--in-cluster: the live cluster's objects, read once into memory; else None (--state)."""
    if not (args.kubeconfig or args.in_cluster):
        return None
    from webhook.kube.client import explain_error
    from webhook.kube.snapshot import cluster_objects
    from webhook.state.memory import InMemoryClusterState

    try:
        return InMemoryClusterState(cluster_objects(args.kubeconfig, args.in_cluster))
    except Exception as exc:  # the user's kubeconfig or cluster: say which, exit 2
        raise ClusterUnreadable(explain_error(exc)) from None


def _notice_unknown_namespaces(args: argparse.Namespace, namespaces: list[str]) -> None:
    if not namespaces:
        return
    source = args.state or ("the cluster" if args.kubeconfig or args.in_cluster else None)
    if source is None and args.values_file is not None:
        source = f"{args.values_file} (namespaceSelector)"
    where = "no --state given, so no namespace is known" if source is None else \
        f"namespace {', '.join(map(repr, namespaces))} is not in {source}"
    print(f"quartermaster apply: notice: {where}: policies that select namespaces (every platform policy) match "
          "nothing there; give the Namespace objects with --state (see examples/state)", file=sys.stderr)
