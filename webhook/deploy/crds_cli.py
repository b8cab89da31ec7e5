"""`quartermaster crds`: the CustomResourceDefinitions of the platform policy kinds, as YAML.

    quartermaster crds | kubectl apply -f -         # install or update the CRDs without the chart
    quartermaster crds --output DIR                 # one file per CRD
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from webhook.commandline import add_command
from webhook.deploy.chart_files import crd_yaml
from webhook.deploy.crds import generate_crds
from webhook.deploy.openapi import SchemaConversionError


def add_crds_command(commands: argparse._SubParsersAction, summary: str) -> None:
    crds = add_command(
        commands, "crds", summary,
        "Print the CustomResourceDefinitions of the platform policy kinds (their openAPIV3Schema is derived from\n"
        "the kinds' JSON schemas), as one YAML stream, or write one file each.",
        ["quartermaster crds | kubectl apply -f -       # install or update the CRDs without the chart",
         "quartermaster crds --output crds/             # one file per CRD"], run_crds)
    crds.add_argument("--output", type=Path, default=None, metavar="DIR", help="write DIR/<crd name>.yaml instead")


def run_crds(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr  # looked up per call: tests and callers swap them
    from webhook.platform import platform_kinds

    try:
        crds = generate_crds(platform_kinds())
    except (SchemaConversionError, ValueError) as exc:
        err.write(f"quartermaster crds: {exc}\n")
        return 2
    if args.output is None:
        out.write("---\n".join(crd_yaml(crd) for crd in crds))
        return 0
    args.output.mkdir(parents=True, exist_ok=True)
    for crd in crds:
        (args.output / f"{crd.name}.yaml").write_text(crd_yaml(crd))
        err.write(f"wrote {args.output / (crd.name + '.yaml')}\n")
    return 0
