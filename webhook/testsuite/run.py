"""Run test suites: load each suite's world, admit every resource offline, check the expected results.

The runner knows no policy family: policies come through the same loader as `serve` (so any family
registered there plugs in), and results are RuleResults. One suite's failure (unreadable file, a
policy that does not load, an exception anywhere) fails that suite's results with the reason; the
other suites run on.
"""

from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable, Mapping, Protocol, Sequence

from webhook.model.quickinit import frozen_dataclass
from webhook.testsuite.check import Checker, Observed, PolicyInfo, CheckRow, resource_key
from webhook.testsuite.load import read_expected, read_objects
from webhook.testsuite.model import ExpectedResult, Suite, SuiteError
from webhook.testsuite.output import SuiteReport

log = logging.getLogger(__name__)


class World(Protocol):
    """One suite's policies and cluster, ready to admit resources offline."""

    policies: Sequence[PolicyInfo]

    async def admit(self, resource: Mapping[str, Any], operation: str) -> Observed: ...


WorldFactory = Callable[[Suite, list[dict[str, Any]]], Awaitable[World]]


@frozen_dataclass
class RunOptions:
    build_world: WorldFactory


def _failed_all(suite: Suite, reason: str, message: str) -> tuple[CheckRow, ...]:
    rows = []
    for expected in suite.results:
        for name in expected.resources or ("*",):
            rows.append(CheckRow(expected.policy, expected.rule, name, False, reason, message, expected.result))
    if not rows:  # a suite with nothing to check still shows that it could not run
        rows.append(CheckRow("-", "", "-", False, reason, message))
    return tuple(rows)


def _short(what: str, exc: BaseException, limit: int = 120) -> str:
    """The REASON column names the problem (an unknown kind, a missing file); the detail has it all."""
    text = " ".join(str(exc).split())
    text = text.split("policies refused: ", 1)[-1]
    return f"{what}: {text[:limit]}{'...' if len(text) > limit else ''}"


def _operation(suite: Suite, expected: ExpectedResult | None = None) -> str:
    return (expected.operation if expected and expected.operation else "") or suite.values.operation or "CREATE"


async def run_suite(suite: Suite, options: RunOptions) -> SuiteReport:
    path = str(suite.path)
    if suite.error:
        return SuiteReport(path, suite.name, _failed_all(suite, "Suite error", suite.error))
    if suite.unsupported:
        features = ", ".join(suite.unsupported)
        return SuiteReport(path, suite.name, _failed_all(suite, f"Unsupported: {features}",
                                                         f"this runner does not support the suite field(s) {features} yet"))
    try:
        return SuiteReport(path, suite.name, tuple(await _run(suite, options)))
    except SuiteError as exc:
        return SuiteReport(path, suite.name, _failed_all(suite, _short("Suite error", exc), str(exc)))
    except Exception as exc:  # the runner never crashes: the suite's results carry the reason
        log.debug("suite %s failed", path, exc_info=True)
        return SuiteReport(path, suite.name, _failed_all(suite, _short("Runner error", exc), f"{type(exc).__name__}: {exc}"))


async def _run(suite: Suite, options: RunOptions) -> list[CheckRow]:
    resources = read_objects(suite, suite.resources, "resources")
    world = await options.build_world(suite, resources)
    operations = {_operation(suite)} | {_operation(suite, e) for e in suite.results}
    observed: dict[str, dict[tuple[str, str, str, str], Observed]] = {}
    for operation in sorted(operations):
        per_resource = observed.setdefault(operation, {})
        for resource in resources:
            try:
                per_resource[resource_key(resource)] = await world.admit(resource, operation)
            except Exception as exc:
                log.debug("admitting %s failed", resource_key(resource), exc_info=True)
                per_resource[resource_key(resource)] = Observed(resource, error=f"{type(exc).__name__}: {exc}")
    cache: dict[str, list[dict[str, Any]]] = {}

    def expected_objects(name: str) -> list[dict[str, Any]]:
        if name not in cache:
            cache[name] = read_expected(suite.resolve(name))
        return cache[name]

    checker = Checker(suite, world.policies, expected_objects)
    rows: list[CheckRow] = []
    for expected in suite.results:
        rows.extend(checker.check(expected, observed[_operation(suite, expected)]))
    return rows


async def run_suites(suites: Sequence[Suite], options: RunOptions) -> list[SuiteReport]:
    return [await run_suite(suite, options) for suite in suites]
