"""`quartermaster`: parse arguments, build settings, run the command."""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from webhook import __version__
from webhook.deploy.commands import COMMANDS as DEPLOY_COMMANDS, add_deploy_commands, run_deploy_command
from webhook.observability.logs import configure_logging
from webhook.report_command import add_report_command, run_report

EXIT_OK, EXIT_DENIED, EXIT_BAD_INPUT = 0, 1, 2


def _parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="quartermaster",
        description="Admission webhook and policy engine for shared GPU platforms.",
    )
    parser.add_argument("--version", action="version", version=f"quartermaster {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    serve = commands.add_parser(
        "serve", help="serve /mutate and /validate over HTTPS",
        description="Serve admission webhooks over HTTPS. Without --kubeconfig/--in-cluster it runs standalone: "
                    "cluster state in memory, seeded from --state. Missing certificates are generated in --cert-dir.")
    serve.add_argument("--policies", type=Path, default=Path("policies"), help="policy directory or file (default: policies)")
    serve.add_argument("--state", type=Path, default=None, help="manifests that seed the standalone cluster state")
    serve.add_argument("--cert-dir", type=Path, default=Path("certs"), help="tls.crt/tls.key, generated with ca.crt if absent (default: certs)")
    serve.add_argument("--host", default="0.0.0.0", help="address to listen on (default: 0.0.0.0)")
    serve.add_argument("--port", type=int, default=8443, help="HTTPS port (default: 8443)")
    serve.add_argument("--namespace", default=None, help="namespace of the webhook Service, for certificate names (default: $POD_NAMESPACE or quartermaster)")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    live = serve.add_mutually_exclusive_group()
    live.add_argument("--kubeconfig", type=Path, default=None, help="run live against the cluster of this kubeconfig")
    live.add_argument("--in-cluster", action="store_true", help="run live with the pod's service account")
    serve.add_argument("--scan-interval", type=float, default=3600.0,
                       help="live: seconds between background scans; 0 scans only when policies change (default: 3600)")
    serve.add_argument("--no-quota-backstop", action="store_true", help="live: keep no ResourceQuota per profile")

    apply = commands.add_parser(
        "apply", help="run admission offline on manifests",
        description="Run admission offline. Standard output: only YAML, each admitted resource as mutated, then every "
                    "object the policies would create. A table of rule results goes to standard error. "
                    "Exit 0 admitted, 1 denied, 2 bad input.")
    apply.add_argument("--policies", type=Path, required=True, help="policy directory or file")
    apply.add_argument("--state", type=Path, default=None, help="manifests of the cluster state (namespaces, pods, PVCs, claims)")
    apply.add_argument("files", nargs="+", metavar="FILE", help="manifests to admit ('-' reads standard input)")
    add_deploy_commands(commands, argv)  # certs, crds (imported only when one of them runs)
    add_report_command(commands)
    return parser


def _serve(args: argparse.Namespace) -> int:
    from webhook.app import PolicyLoadFailed, Quartermaster, Settings
    from webhook.kube.settings import LiveSetupError, live_settings
    from webhook.state.memory import StateSeedError

    import asyncio

    configure_logging(args.log_level)
    settings = Settings(policies=args.policies, state=args.state, cert_dir=args.cert_dir, host=args.host, port=args.port,
                        **({"namespace": args.namespace} if args.namespace else {}))
    if args.kubeconfig or args.in_cluster:
        settings = replace(settings, live=live_settings(args, settings.namespace))
    try:
        qm = Quartermaster.build(settings)
        asyncio.run(qm.serve())
    except (StateSeedError, LiveSetupError) as exc:
        print(f"quartermaster: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except PolicyLoadFailed as exc:
        print(f"quartermaster: policies in {settings.policies} refused:\n{exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:
        print(f"quartermaster: cannot serve on {settings.host}:{settings.port}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK


def _apply(args: argparse.Namespace) -> int:
    from webhook.app import PolicyLoadFailed, Quartermaster, Settings
    from webhook.apply import BadInput, read_resources, run_apply, write_documents, write_table
    from webhook.state.memory import StateSeedError

    import asyncio

    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    try:
        resources = read_resources(args.files)
        qm = Quartermaster.build(Settings(policies=args.policies, state=args.state))
        qm.load_policies()
    except (BadInput, StateSeedError) as exc:
        print(f"quartermaster apply: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except PolicyLoadFailed as exc:
        print(f"quartermaster apply: policies refused:\n{exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    report = asyncio.run(run_apply(qm, resources))
    write_documents(report, sys.stdout)
    write_table(report, sys.stderr)
    return EXIT_DENIED if report.denials else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _parser(argv).parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "report":
        return run_report(args)
    if args.command in DEPLOY_COMMANDS:
        return run_deploy_command(args)
    return _apply(args)


if __name__ == "__main__":
    raise SystemExit(main())
