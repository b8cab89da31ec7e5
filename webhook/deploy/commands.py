"""The deployment commands of `quartermaster`: `certs` and `crds` (cli.py registers them here)."""

from __future__ import annotations

import argparse

from webhook.deploy.certs_cli import add_certs_command, run_certs
from webhook.deploy.crds_cli import add_crds_command, run_crds

COMMANDS = {"certs": run_certs, "crds": run_crds}


def add_deploy_commands(commands: argparse._SubParsersAction) -> None:
    add_certs_command(commands)
    add_crds_command(commands)


def run_deploy_command(args: argparse.Namespace) -> int:
    return COMMANDS[args.command](args)
