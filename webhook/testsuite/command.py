"""`quartermaster test PATH...`: find suites, run them, print, exit 0 (all passed), 1 (a failure), 2 (unreadable)."""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import sys
from typing import TextIO

from webhook.model.exception_trust import HONOUR_GIVEN, ExceptionTrust
from webhook.policy.family import CelEvaluation
from webhook.testsuite.harness import build_world
from webhook.testsuite.load import Unreadable, discover, read_suites
from webhook.testsuite.output import summary_line, write_json, write_tables, write_yaml
from webhook.testsuite.run import RunOptions, run_suites

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def run_test_command(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None,
                     exceptions: ExceptionTrust = HONOUR_GIVEN,
                     cel_evaluation: CelEvaluation = CelEvaluation.DEFAULT) -> int:
    """`exceptions`: which PolicyExceptions the suites' admissions honour (`--exception-namespace`);
    `cel_evaluation`: the routes of the CEL policies (`--cel-evaluation`)."""
    out = out if out is not None else sys.stdout  # looked up per call: tests swap sys.stdout
    err = err if err is not None else sys.stderr
    logging.basicConfig(level=logging.ERROR, stream=err)
    try:
        files = discover(args.paths)
        suites = [suite for path in files for suite in read_suites(path)]
    except Unreadable as exc:
        print(f"quartermaster test: {exc}", file=err)
        return EXIT_BAD_INPUT
    if not suites:
        # always an error here (`--require-tests`, Kyverno's opt-in, is accepted and changes nothing): a path that
        # holds no suite is more likely a typo than a pass
        print(f"quartermaster test: no kyverno-test.yaml below {', '.join(args.paths)}", file=err)
        return EXIT_BAD_INPUT
    world = functools.partial(build_world, exceptions=exceptions, cel_evaluation=cel_evaluation)
    reports = asyncio.run(run_suites(suites, RunOptions(build_world=world)))
    write = {"json": write_json, "yaml": write_yaml}.get(args.output, write_tables)
    write(reports, out, args.detailed_results, args.fail_only)
    # YAML output stays one YAML document: the summary is a comment there
    out.write(("# " if args.output == "yaml" else "") + summary_line(reports) + "\n")
    return EXIT_FAILED if any(r.failed for r in reports) else EXIT_OK
