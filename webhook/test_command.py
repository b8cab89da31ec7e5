"""`quartermaster test PATH...`: its options; the suites are run by webhook.testsuite (imported when it runs)."""

from __future__ import annotations

import argparse
from typing import Any

from webhook.commandline import add_cel_evaluation, add_command, add_exception_namespace


def add_test_command(commands: Any, summary: str) -> None:
    test = add_command(
        commands, "test", summary,
        "Run policy test suites: cli.kyverno.io/v1alpha1 Test files named kyverno-test.yaml (or\n"
        ".kyverno-test/kyverno-test.yaml), found recursively under each PATH. Prints a table per suite, then\n"
        "'N passed, N failed', one per expected result. Exit 1 if any failed, 2 on unreadable input.",
        ["quartermaster test examples/kyverno/notebook-home",
         "quartermaster test examples --detailed-results   # every kyverno-test.yaml below examples/",
         "quartermaster test examples/kyverno -o json",
         "quartermaster test examples --fail-only -o yaml   # only what failed, as YAML"],
        run_test)
    test.add_argument("paths", nargs="+", metavar="PATH", help="test files or directories to search")
    add_exception_namespace(test, "default: a suite's own exceptions are honoured for any resource, as the "
                                  "Kyverno CLI does")
    add_cel_evaluation(test)
    test.add_argument("--detailed-results", action="store_true", help="add the message of each result")
    test.add_argument("-o", "--output", choices=["table", "json", "yaml"], default="table",
                      help="output format (default: table)")
    test.add_argument("--fail-only", action="store_true", help="show only the results that failed (as kyverno test)")
    test.add_argument("--require-tests", action="store_true",
                      help="accepted for Kyverno's habit; a PATH without kyverno-test.yaml always fails here")


def run_test(args: argparse.Namespace) -> int:
    from webhook.model.exception_trust import HONOUR_GIVEN, ExceptionTrust
    from webhook.testsuite.command import run_test_command  # loads the engine only for `test`

    from webhook.policy.family import CelEvaluation

    given = args.exception_namespaces  # given: serve's rules; else the suites' exceptions as written
    return run_test_command(args, exceptions=ExceptionTrust(frozenset(given)) if given else HONOUR_GIVEN,
                            cel_evaluation=CelEvaluation(args.cel_evaluation))
