"""What every `quartermaster` subcommand shares: its parser (help on each option, an Examples section),
bounded argument types, and the plain-text logging of the offline commands.

A leaf module (standard library only), so that each command module (cli.py, report_command.py,
deploy/) declares its own parser with it without importing the others.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable, Sequence


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the Examples block as written; shows defaults only where the help text does not already."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=32, width=100)


def add_command(commands: Any, name: str, summary: str, description: str, examples: Sequence[str],
                run: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
    """One subcommand: `summary` in the command list, `description` and the examples in its --help.
    `args.run(args)` runs it; `args.parser` is its own parser, for errors found after parsing."""
    epilog = "Examples:\n" + "\n".join(f"  {line}" for line in examples)
    parser = commands.add_parser(name, help=summary, description=description, epilog=epilog,
                                 formatter_class=HelpFormatter)
    parser.set_defaults(run=run, parser=parser)
    return parser


def port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port number (1-65535)")
    return value


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= value < 10**7:
        raise argparse.ArgumentTypeError(f"{text} seconds is out of range (0 to 10000000)")
    return value


def existing_path(text: str) -> Path:
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text}: no such file or directory")
    return path


def positive_int(limit: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not 1 <= value <= limit:
            raise argparse.ArgumentTypeError(f"{value} is out of range (1 to {limit})")
        return value
    return parse


class _CommandFormatter(logging.Formatter):
    def __init__(self, prog: str) -> None:
        super().__init__()
        self.prog = prog

    def format(self, record: logging.LogRecord) -> str:
        level = "" if record.levelno == logging.INFO else f"{record.levelname.lower()}: "
        return f"{self.prog}: {level}{record.getMessage()}"


class _NotReportedTwice(logging.Filter):
    """Policy load errors are printed by the command itself, in one block: drop the log line of each."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name == "webhook.policy.source" and record.levelno >= logging.ERROR)


class _CurrentStderr(logging.StreamHandler):
    """Writes to whatever sys.stderr is at the time (callers and tests swap it), never to a stale one."""

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _: Any) -> None:
        pass


def configure_cli_logging(prog: str, level: int = logging.WARNING) -> None:
    """Offline commands (apply, report, validate): plain `quartermaster apply: warning: ...` lines on stderr."""
    handler = _CurrentStderr()
    handler.setFormatter(_CommandFormatter(prog))
    handler.addFilter(_NotReportedTwice())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


_DNS_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"


def exception_namespace(text: str) -> str:
    """A namespace PolicyExceptions are honoured from: a DNS label (RFC 1123), or `*` for every namespace."""
    if text != "*" and not re.fullmatch(_DNS_LABEL, text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a namespace name (RFC 1123 label) nor '*'")
    return text


CEL_EVALUATION_ENV = "QUARTERMASTER_CEL_EVALUATION"
CEL_EVALUATIONS = ("default", "reference")  # webhook.policy.family.CelEvaluation


def cel_evaluation(text: str) -> str:
    if text not in CEL_EVALUATIONS:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(CEL_EVALUATIONS)} (the option, or else "
                                         f"the environment variable {CEL_EVALUATION_ENV})")
    return text


def add_cel_evaluation(parser: argparse.ArgumentParser) -> None:
    """`--cel-evaluation default|reference`, as serve, apply, test and validate take it; the environment variable
    QUARTERMASTER_CEL_EVALUATION gives the default (checked like the option: argparse types a string default)."""
    parser.add_argument("--cel-evaluation", type=cel_evaluation, default=os.environ.get(CEL_EVALUATION_ENV, "default"),
                        metavar="{default,reference}",
                        help="reference: every CEL policy takes the reference route (each expression in turn, no fast "
                             f"path), for comparing when a fast path is suspected; default: the planned routes "
                             f"(`validate --explain` shows them). Default from {CEL_EVALUATION_ENV}, else default")


def add_exception_namespace(parser: argparse.ArgumentParser, default_rule: str) -> None:
    """`--exception-namespace NS` (repeatable), as serve, apply and test take it (webhook/model/exception_trust.py)."""
    parser.add_argument("--exception-namespace", dest="exception_namespaces", type=exception_namespace,
                        action="append", default=None, metavar="NS",
                        help="honour PolicyExceptions of namespace NS (repeatable; '*' any namespace), each for "
                             f"the resources of its own namespace only; {default_rule}")


REPORT_FORMAT_NAMES = ("wgpolicyk8s", "openreports")  # webhook.reports.report_format.REPORT_FORMATS, default first


def add_report_format(parser: argparse.ArgumentParser, what: str) -> None:
    """`--report-format wgpolicyk8s|openreports`, as serve, report and apply take it."""
    parser.add_argument("--report-format", choices=REPORT_FORMAT_NAMES, default=REPORT_FORMAT_NAMES[0],
                        help=f"{what}: wgpolicyk8s (wgpolicyk8s.io/v1alpha2 PolicyReport/ClusterPolicyReport, the "
                             "default) or openreports (openreports.io/v1alpha1 Report/ClusterReport, for Policy "
                             "Reporter 3.2+ and Kyverno 1.15+ with OpenReports)")
