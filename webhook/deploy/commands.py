"""The deployment commands of `quartermaster`: `certs` and `crds` (cli.py registers them here).

Their modules import cryptography and the CRD generator (~0.5 s): they are imported only when one of
these commands runs; every other command (and `--help`) sees a placeholder with the same help line.
"""

from __future__ import annotations

import argparse
from typing import Sequence

HELP = {"certs": "inspect and rotate the webhook certificates", "crds": "print the CRDs of the platform policy kinds"}
COMMANDS = frozenset(HELP)


def add_deploy_commands(commands: argparse._SubParsersAction, argv: Sequence[str] | None = None) -> None:
    """The real subparsers when `argv` names a deploy command (or is None), placeholders otherwise."""
    if argv is not None and not COMMANDS.intersection(argv):
        for name, text in HELP.items():
            commands.add_parser(name, help=text)
        return
    from webhook.deploy.certs_cli import add_certs_command
    from webhook.deploy.crds_cli import add_crds_command

    add_certs_command(commands)
    add_crds_command(commands)


def run_deploy_command(args: argparse.Namespace) -> int:
    if args.command == "certs":
        from webhook.deploy.certs_cli import run_certs

        return run_certs(args)
    from webhook.deploy.crds_cli import run_crds

    return run_crds(args)
