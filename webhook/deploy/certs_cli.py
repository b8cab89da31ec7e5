"""`quartermaster certs`: inspect and rotate the webhook's certificates, print the CA bundle.

Each command works on a cert dir (`--cert-dir`, the files the server reads) or, with `--secret NS/NAME`,
on the Kubernetes Secret that holds the same four entries (through --kubeconfig or --in-cluster).
Exit codes: 0 done (or nothing was due), 1 refused (a rotation that cannot be done now, material that
does not verify), 2 bad input (missing or unreadable certificates, a bad option).
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import json
import sys
from pathlib import Path
from typing import TextIO

from webhook.certs.generate import CA_CERT
from webhook.commandline import HelpFormatter, add_command, positive_int
from webhook.certs.inspect import format_inspection, inspect_material
from webhook.certs.material import CertMaterial, CertMaterialError, read_directory
from webhook.certs.rotate import RotationError, RotationPlan, RotationPolicy, rotate_directory

EXIT_OK, EXIT_REFUSED, EXIT_BAD_INPUT = 0, 1, 2


def _source_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cert-dir", type=Path, default=Path("certs"),
                        help="directory with ca.crt, ca.key, tls.crt, tls.key (default: certs)")
    parser.add_argument("--secret", metavar="NAMESPACE/NAME", default=None,
                        help="use this Kubernetes Secret instead of --cert-dir")
    cluster = parser.add_mutually_exclusive_group()
    cluster.add_argument("--kubeconfig", type=Path, default=None, help="kubeconfig for --secret (default: ~/.kube/config)")
    cluster.add_argument("--in-cluster", action="store_true", help="use the pod's service account for --secret")


def add_certs_command(commands: argparse._SubParsersAction, summary: str) -> None:
    certs = add_command(commands, "certs", summary,
                        "Inspect and rotate the webhook's certificates (a cert dir or a Kubernetes Secret), print the CA\n"
                        "bundle. Exit 0 done or nothing due, 1 refused, 2 bad input.", _EXAMPLES["certs"], run_certs)
    sub = certs.add_subparsers(dest="certs_command", metavar="SUBCOMMAND", required=True)

    inspect = _sub(sub, "inspect", "subjects, SANs, expiry, and whether the chain verifies")
    _source_options(inspect)
    inspect.add_argument("--json", action="store_true", help="print JSON instead of text")

    rotate = _sub(
        sub, "rotate", "renew what is due (serving certificate, CA rollover)",
        "Renew the serving certificate when it is within --renew-before-days of expiry; start a CA rollover\n"
        "when the CA is within --ca-renew-before-days (or with --ca): the new CA is cross-signed by the old one\n"
        "and both are trusted for --overlap-hours; a later run retires the old CA. With --secret, the caBundle\n"
        "of the named webhook configurations is updated before the Secret.")
    _source_options(rotate)
    rotate.add_argument("--ca", action="store_true", help="start a CA rollover now")
    rotate.add_argument("--dry-run", action="store_true", help="say what is due, change nothing")
    rotate.add_argument("--dns-name", action="append", default=None, metavar="NAME",
                        help="DNS names of the serving certificate (repeat; default: keep the current ones)")
    defaults = RotationPolicy()
    days = positive_int(36500)
    rotate.add_argument("--serving-days", type=days, default=defaults.serving_days, metavar="DAYS",
                        help=f"lifetime of a new serving certificate (default: {defaults.serving_days})")
    rotate.add_argument("--renew-before-days", type=days, default=defaults.renew_before_days, metavar="DAYS",
                        help=f"renew the serving certificate when fewer days are left (default: {defaults.renew_before_days})")
    rotate.add_argument("--ca-days", type=days, default=defaults.ca_days, metavar="DAYS",
                        help=f"lifetime of a new CA (default: {defaults.ca_days})")
    rotate.add_argument("--ca-renew-before-days", type=days, default=defaults.ca_renew_before_days, metavar="DAYS",
                        help=f"start a CA rollover when fewer days are left (default: {defaults.ca_renew_before_days})")
    overlap = defaults.overlap.total_seconds() / 3600
    rotate.add_argument("--overlap-hours", type=float, default=overlap, metavar="HOURS",
                        help=f"hours the old and the new CA are both trusted after a rollover (default: {overlap:g})")
    rotate.add_argument("--mutating-webhook", action="append", default=[], metavar="NAME",
                        help="MutatingWebhookConfiguration whose caBundle follows the Secret (repeat)")
    rotate.add_argument("--validating-webhook", action="append", default=[], metavar="NAME",
                        help="ValidatingWebhookConfiguration whose caBundle follows the Secret (repeat)")

    bundle = _sub(sub, "bundle", "print the CA bundle (ca.crt) for the webhook configurations' caBundle")
    _source_options(bundle)
    bundle.add_argument("--base64", action="store_true", help="one line of base64, as caBundle takes it")


_EXAMPLES = {
    "certs": ["quartermaster certs inspect --cert-dir certs",
              "quartermaster certs rotate --dry-run --secret quartermaster/quartermaster-tls --in-cluster",
              "quartermaster certs bundle --base64"],
    "inspect": ["quartermaster certs inspect --cert-dir certs",
                "quartermaster certs inspect --secret quartermaster/quartermaster-tls --kubeconfig ~/.kube/config --json"],
    "rotate": ["quartermaster certs rotate --cert-dir certs --dry-run",
               "quartermaster certs rotate --cert-dir certs --ca              # start a CA rollover now",
               "quartermaster certs rotate --secret quartermaster/quartermaster-tls --in-cluster \\",
               "    --mutating-webhook quartermaster --validating-webhook quartermaster"],
    "bundle": ["quartermaster certs bundle --cert-dir certs",
               "quartermaster certs bundle --secret quartermaster/quartermaster-tls --base64"],
}


def _sub(sub: argparse._SubParsersAction, name: str, summary: str, description: str | None = None) -> argparse.ArgumentParser:
    epilog = "Examples:\n" + "\n".join(f"  {line}" for line in _EXAMPLES[name])
    return sub.add_parser(name, help=summary, description=description or summary[0].upper() + summary[1:] + ".",
                          epilog=epilog, formatter_class=HelpFormatter)


def _secret_ref(text: str) -> tuple[str, str]:
    namespace, _, name = text.partition("/")
    if not namespace or not name or "/" in name:
        raise ValueError(f"--secret must be NAMESPACE/NAME, got {text!r}")
    return namespace, name


def _policy(args: argparse.Namespace) -> RotationPolicy:
    return RotationPolicy(serving_days=args.serving_days, renew_before_days=args.renew_before_days,
                          ca_days=args.ca_days, ca_renew_before_days=args.ca_renew_before_days,
                          overlap=dt.timedelta(hours=args.overlap_hours))


def _load(args: argparse.Namespace) -> CertMaterial:
    if args.secret:
        from webhook.deploy.secret_rotation import connect

        namespace, name = _secret_ref(args.secret)
        with connect(args.kubeconfig, args.in_cluster) as publisher:
            secret = publisher.read_secret(namespace, name)
        return CertMaterial.from_data(secret.data)
    return read_directory(args.cert_dir)


def _inspect(args: argparse.Namespace, out: TextIO) -> int:
    inspection = inspect_material(_load(args), dt.datetime.now(dt.timezone.utc))
    out.write((json.dumps(inspection.to_json(), indent=2) if args.json else format_inspection(inspection)) + "\n")
    return EXIT_OK if inspection.verifies_with_bundle and not any("expired" in p for p in inspection.problems) \
        else EXIT_REFUSED


def _bundle(args: argparse.Namespace, out: TextIO) -> int:
    pem = _load(args).to_data()[CA_CERT]
    out.write(base64.b64encode(pem).decode() + "\n" if args.base64 else pem.decode())
    return EXIT_OK


def _report(plan: RotationPlan, dry_run: bool, out: TextIO) -> None:
    if not plan.changed:
        out.write("nothing due: the serving certificate and the CA are within their renewal windows\n")
    for step in plan.steps:
        out.write(f"{'would: ' if dry_run else ''}{step}\n")
    for warning in plan.warnings:
        out.write(f"warning: {warning}\n")


def _rotate(args: argparse.Namespace, out: TextIO) -> int:
    policy = _policy(args)
    if args.secret:
        from webhook.deploy.secret_rotation import connect, rotate_secret

        namespace, name = _secret_ref(args.secret)
        with connect(args.kubeconfig, args.in_cluster) as publisher:
            result = rotate_secret(publisher, namespace, name, args.mutating_webhook, args.validating_webhook,
                                   policy, rotate_ca=args.ca, dns_names=args.dns_name, dry_run=args.dry_run)
        _report(result.plan, args.dry_run, out)
        for line in result.published:
            out.write(f"{line}\n")
        return EXIT_OK
    if args.mutating_webhook or args.validating_webhook:
        raise ValueError("--mutating-webhook/--validating-webhook need --secret (the API holds the configurations)")
    plan = rotate_directory(args.cert_dir, policy, rotate_ca=args.ca, dns_names=args.dns_name, dry_run=args.dry_run)
    _report(plan, args.dry_run, out)
    return EXIT_OK


def run_certs(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr  # looked up per call: tests and callers swap them
    command = {"inspect": _inspect, "rotate": _rotate, "bundle": _bundle}[args.certs_command]
    try:
        return command(args, out)
    except CertMaterialError as exc:
        where = args.secret or args.cert_dir
        err.write(f"quartermaster certs {args.certs_command}: {where}: {exc}\n")
        return EXIT_BAD_INPUT
    except ValueError as exc:  # bad option values (RotationPolicy, --secret)
        err.write(f"quartermaster certs {args.certs_command}: {exc}\n")
        return EXIT_BAD_INPUT
    except RotationError as exc:
        err.write(f"quartermaster certs {args.certs_command}: refused: {exc}\n")
        return EXIT_REFUSED
    except ConnectionError as exc:
        err.write(f"quartermaster certs {args.certs_command}: {exc}\n")
        return EXIT_BAD_INPUT
