"""`quartermaster`: parse arguments, run the command.

Each subcommand is one `_add_<name>` function that declares its options (each with help) and its
Examples, and names the function that runs it; that function imports what the command needs only
when it runs. Only the command being run is declared: the others are placeholders with their line of
`quartermaster --help`, so a short command (or `--version`) builds one parser and imports one command
module. To add a command, add one `_add_<name>(commands, summary)` function (or one in the command's own
module) and list it in COMMANDS with its summary, the one place that line is written.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from webhook import __version__
from webhook.commandline import (REPORT_FORMAT_NAMES, add_cel_evaluation, add_command, add_exception_namespace,
                                 add_report_format, configure_cli_logging, existing_path, port, seconds)

EXIT_OK, EXIT_BAD_INPUT = 0, 2


def _add_serve(commands: Any, summary: str) -> None:
    serve = add_command(
        commands, "serve", summary,
        "Serve admission webhooks over HTTPS. Without --kubeconfig/--in-cluster it runs standalone: cluster state\n"
        "in memory, seeded from --state. Missing certificates are generated in --cert-dir. Logs are JSON lines on\n"
        "standard error: one per denied or warned admission (policy, rule, message, user); --log-level debug adds\n"
        "every admission and each policy's decision.",
        ["quartermaster serve --state examples/state                  # standalone, https://127.0.0.1:8443",
         "quartermaster serve --host 0.0.0.0 --port 9443 --policies /etc/quartermaster/policies",
         "quartermaster serve --kubeconfig ~/.kube/config --scan-interval 600   # live mode",
         "quartermaster serve --in-cluster --force-audit            # in the chart, audit-only rollout"],
        _serve)
    serve.add_argument("--policies", type=Path, default=Path("policies"), metavar="PATH",
                       help="policy directory or file, reloaded when it changes (default: policies)")
    serve.add_argument("--allow-empty", action="store_true",
                       help="no warning when --policies holds no policy (default: warn)")
    serve.add_argument("--force-audit", action="store_true",
                       help="run every policy in its audit action: warn and report, never block")
    serve.add_argument("--state", type=existing_path, default=None, metavar="DIR",
                       help="standalone: manifests (YAML) that seed the in-memory cluster state")
    add_exception_namespace(serve, "default: none is honoured")
    add_cel_evaluation(serve)
    serve.add_argument("--cert-dir", type=Path, default=Path("certs"), metavar="DIR",
                       help="tls.crt and tls.key, generated with ca.crt if absent (default: certs)")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to listen on; 0.0.0.0 for every interface, as in a pod (default: 127.0.0.1)")
    serve.add_argument("--port", type=port, default=8443, help="HTTPS port, 1-65535 (default: 8443)")
    serve.add_argument("--namespace", default=None,
                       help="namespace of the webhook Service, for certificate names (default: $POD_NAMESPACE or quartermaster)")
    serve.add_argument("--client-ca", type=Path, default=None, metavar="FILE",
                       help="require client certificates signed by this CA (the API server's webhook client certificate)")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"],
                       help="debug adds each admission and each policy's decision (default: info)")
    serve.add_argument("--event-loop", default="auto", choices=["auto", "uvloop", "asyncio"],
                       help="asyncio event loop; auto: uvloop when installed, as it is with quartermaster (default: auto)")
    live = serve.add_mutually_exclusive_group()
    live.add_argument("--kubeconfig", type=existing_path, default=None, metavar="FILE",
                      help="run live against the cluster of this kubeconfig")
    live.add_argument("--in-cluster", action="store_true", help="run live with the pod's service account")
    serve.add_argument("--scan-interval", type=seconds, default=3600.0, metavar="SECONDS",
                       help="live: seconds between background scans; 0 scans only when policies change (default: 3600)")
    serve.add_argument("--no-quota-backstop", action="store_true", help="live: keep no ResourceQuota per profile")
    serve.add_argument("--policy-objects", default="quartermaster.dev", metavar="GROUP,...",
                       help="live: read the policy objects of these API groups beside --policies (files win on a "
                            "name conflict); add kyverno.io,policies.kyverno.io only where Kyverno does not run; "
                            "none: files only (default: quartermaster.dev)")
    add_report_format(serve, "live: the reports written")


def _add_apply(commands: Any, summary: str) -> None:
    from webhook.apply_command import add_apply_command

    add_apply_command(commands, summary)


def _add_validate(commands: Any, summary: str) -> None:
    validate = add_command(
        commands, "validate", summary,
        "Check every policy document under each PATH as `serve --policies PATH` would load it: schema, CEL,\n"
        "references between documents. One line per problem (file:line: document N field F: what is wrong) on\n"
        "standard output, then a summary on standard error. Exit 0 when every PATH loads, 2 on any problem.",
        ["quartermaster validate policies",
         "quartermaster validate policies/profile-quota.yaml examples/kyverno/",
         "quartermaster validate --explain policies/   # each policy's evaluation route, and why"],
        _validate)
    validate.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="policy directory or file")
    validate.add_argument("--allow-empty", action="store_true", help="a PATH without policies is no warning")
    add_exception_namespace(validate, "as serve will be given it (default: none)")
    add_cel_evaluation(validate)
    validate.add_argument("--explain", action="store_true",
                          help="also print each policy's evaluation route and why (file#document: kind/name: route: why)")


def _add_report(commands: Any, summary: str) -> None:
    from webhook.report_command import add_report_command

    add_report_command(commands, summary)


def _add_certs(commands: Any, summary: str) -> None:
    from webhook.deploy.certs_cli import add_certs_command  # cryptography is slow to import: only when `certs` runs

    add_certs_command(commands, summary)


def _add_crds(commands: Any, summary: str) -> None:
    from webhook.deploy.crds_cli import add_crds_command

    add_crds_command(commands, summary)


def _add_test(commands: Any, summary: str) -> None:
    from webhook.test_command import add_test_command

    add_test_command(commands, summary)


def _add_jp(commands: Any, summary: str) -> None:
    from webhook.jp_command import add_jp_command

    add_jp_command(commands, summary)


def _add_version(commands: Any, summary: str) -> None:
    add_command(commands, "version", summary, "Print Quartermaster's version.", ["quartermaster version"], _version)


def _version(args: argparse.Namespace) -> int:
    print(f"quartermaster {__version__}")
    return 0


def _add_convert(commands: Any, summary: str) -> None:
    from webhook.convert_command import add_convert_command

    add_convert_command(commands, summary)


def _add_token_refresher(commands: Any, summary: str) -> None:
    from webhook.refresher.arguments import add_token_refresher_command

    add_token_refresher_command(commands, summary)


# (name, summary, declaration), in the order of `quartermaster --help`: the summary is the command's line there,
# shown by its placeholder and passed to its declaration
COMMANDS: tuple[tuple[str, str, Callable[[Any, str], None]], ...] = (
    ("serve", "serve /mutate and /validate over HTTPS", _add_serve),
    ("apply", "run admission offline on manifests, like kyverno apply", _add_apply),
    ("validate", "check policy files as serve would load them (lint)", _add_validate),
    ("test", "run Kyverno CLI test suites (kyverno-test.yaml)", _add_test),
    ("convert", "convert Kyverno ClusterPolicies to ValidatingPolicy/MutatingPolicy", _add_convert),
    ("report", "show policy results (PolicyReports) as a table, JSON, YAML or HTML", _add_report),
    ("certs", "inspect and rotate the webhook certificates", _add_certs),
    ("crds", "print the CRDs of the platform policy kinds", _add_crds),
    ("token-refresher", "keep an OIDC access token fresh in a file (the notebook sidecar)", _add_token_refresher),
    ("jp", "evaluate and parse JMESPath as Kyverno policies do (as kyverno jp)", _add_jp),
    ("version", "print the version (as --version, and as kyverno version)", _add_version),
)


def command_named(argv: Sequence[str]) -> str | None:
    """The command `argv` runs: its first argument that is not an option (no top-level option takes a value)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """`argv`: the arguments about to be parsed; only the command they name is declared whole (its module
    imported, its options added), the others get their line of the command list. None: every command whole."""
    parser = argparse.ArgumentParser(
        prog="quartermaster", description="Admission webhook and policy engine for shared GPU platforms.",
        epilog="Run `quartermaster COMMAND --help` for a command's options and examples.")
    parser.add_argument("--version", action="version", version=f"quartermaster {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    wanted = command_named(argv) if argv is not None else None
    for name, summary, declare in COMMANDS:
        if argv is None or name == wanted:
            declare(commands, summary)
        else:
            commands.add_parser(name, help=summary)
    return parser


def _serve(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from webhook.app import PolicyLoadFailed, Quartermaster, Settings
    from webhook.kube.settings import LiveSetupError, live_settings
    from webhook.observability.logs import configure_logging
    from webhook.server.eventloop import LoopUnavailable, loop_factory, run
    from webhook.policy.family import CelEvaluation
    from webhook.state.memory import StateSeedError

    if not args.policies.exists():  # the default (policies) is not checked by argparse
        args.parser.error(f"argument --policies: {args.policies}: no such file or directory")
    configure_logging(args.log_level)
    log = logging.getLogger("quartermaster")
    try:
        loop = loop_factory(args.event_loop)
    except LoopUnavailable as exc:
        log.error("not serving: %s", exc)
        return EXIT_BAD_INPUT
    if args.client_ca is not None and not args.client_ca.is_file():
        print(f"quartermaster: --client-ca {args.client_ca}: no such file", file=sys.stderr)
        return EXIT_BAD_INPUT
    settings = Settings(policies=args.policies, state=args.state, cert_dir=args.cert_dir, host=args.host, port=args.port,
                        force_audit=args.force_audit, client_ca=args.client_ca,
                        exception_namespaces=tuple(args.exception_namespaces or ()),
                        cel_evaluation=CelEvaluation(args.cel_evaluation),
                        **({"namespace": args.namespace} if args.namespace else {}))
    if args.force_audit:
        log.warning("--force-audit: every policy warns and reports, none blocks")
    if settings.cel_evaluation is CelEvaluation.REFERENCE:
        log.warning("--cel-evaluation=reference: every CEL policy takes the reference route (no fast path)")
    if args.report_format != REPORT_FORMAT_NAMES[0] and not (args.kubeconfig or args.in_cluster):
        log.warning("--report-format: standalone writes no reports (live mode does; `report` shows them)")
    if not args.allow_empty and _holds_no_policy_file(args.policies):
        log.warning("no policy file in %s: every request is admitted unchanged (--allow-empty to silence)", args.policies)
    try:
        if args.kubeconfig or args.in_cluster:
            settings = replace(settings, live=live_settings(args, settings.namespace))
        qm = Quartermaster.build(settings)
        run(qm.serve(), loop)
    except (StateSeedError, LiveSetupError) as exc:
        log.error("not serving: %s", exc)
        return EXIT_BAD_INPUT
    except PolicyLoadFailed as exc:  # each error was logged with its file when it was found
        log.error("not serving: %d policy errors in %s (above)", len(exc.result.errors), settings.policies)
        return EXIT_BAD_INPUT
    except OSError as exc:
        log.error("cannot serve on %s:%d: %s", settings.host, settings.port, exc.strerror or exc)
        return EXIT_BAD_INPUT
    return EXIT_OK


def _holds_no_policy_file(path: Path) -> bool:
    from webhook.policy.documents import policy_files

    return not policy_files(path)


def _validate(args: argparse.Namespace) -> int:
    from webhook.validate_command import run_validate

    configure_cli_logging("quartermaster validate")
    from webhook.policy.family import CelEvaluation

    return run_validate(args.paths, args.allow_empty, sys.stdout, sys.stderr, tuple(args.exception_namespaces or ()),
                        CelEvaluation(args.cel_evaluation), args.explain)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)
    try:
        code = args.run(args)
        sys.stdout.flush()  # inside the try: a reader gone before the last write is caught here too
        return code
    except BrokenPipeError:
        # the reader went away (`quartermaster report | head`): not our error, and no traceback; point
        # stdout at /dev/null so the interpreter's final flush does not raise it again (Python's recipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
