"""`quartermaster convert FILE...`: print ValidatingPolicy/MutatingPolicy equivalents of Kyverno ClusterPolicies.

Standard output holds only YAML (the converted policies); every rule that has no faithful translation is named
on standard error with the reason. Exit 0 when every rule converted, 1 when some did not, 2 on unreadable input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from webhook.commandline import add_command

EXIT_OK, EXIT_PARTIAL, EXIT_BAD_INPUT = 0, 1, 2


def add_convert_command(commands: argparse._SubParsersAction, summary: str) -> None:
    convert = add_command(
        commands, "convert", summary,
        "Print the policies.kyverno.io/v1 ValidatingPolicy/MutatingPolicy equivalent of each rule of kyverno.io\n"
        "ClusterPolicy/Policy documents where a faithful translation exists; rules that have none are listed on\n"
        "standard error with the reason. Exit 0 all converted, 1 some not, 2 unreadable input.",
        ["quartermaster convert examples/kyverno/convert/require-image-tag.yaml > require-image-tag-vpol.yaml",
         "kubectl get clusterpolicy require-labels -o yaml | quartermaster convert -"],
        run_convert)
    convert.add_argument("files", nargs="+", metavar="FILE", help="policy files ('-' reads standard input)")


def run_convert(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    import yaml  # here, not at the top: cli.py imports this module to declare `convert` for every command

    from webhook.families.kyverno.convert import convert_document  # the Kyverno family only when converting
    from webhook.model import boundedyaml

    converted, refused = [], []
    for name in args.files:
        try:
            text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
            documents = [d for d in boundedyaml.safe_load_all(text) if isinstance(d, dict)]
        except (OSError, yaml.YAMLError) as exc:
            print(f"quartermaster convert: {name}: {exc}", file=err)
            return EXIT_BAD_INPUT
        for document in documents:
            result = convert_document(document)
            converted.extend(result.documents)
            refused.extend(f"{name}: {reason}" for reason in result.refused)
    if converted:
        yaml.safe_dump_all(converted, out, sort_keys=False)
    for reason in refused:
        print(f"not converted: {reason}", file=err)
    return EXIT_PARTIAL if refused else EXIT_OK
