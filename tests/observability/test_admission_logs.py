"""What an admission writes to the log: denials and errors always, repeated audit warnings folded."""

from __future__ import annotations

import json
import logging

import pytest

from webhook.model.results import Action, Outcome, PolicyId, RuleResult
from webhook.model.review import parse_review
from webhook.model.verdict import Verdict
from webhook.observability.logs import JsonFormatter, RepeatWindow, log_admission
from tests.support import review

POLICY = PolicyId("policies.kyverno.io/v1", "ValidatingPolicy", "require-run-as-nonroot")
LOG = logging.getLogger("quartermaster.admission.test")


def _request(namespace: str = "team-a", name: str = "web-1"):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    return parse_review(json.dumps(review(pod)).encode())


def _verdict(*results: RuleResult) -> Verdict:
    return Verdict(allowed=not any(r.blocks for r in results), results=results)


WARNED = RuleResult(POLICY, "autogen", Outcome.FAIL, "Running as root is not allowed.", Action.AUDIT)
DENIED = RuleResult(POLICY, "autogen", Outcome.FAIL, "Running as root is not allowed.", Action.ENFORCE)
ERRORED = RuleResult(POLICY, "autogen", Outcome.ERROR, "no such key: securityContext", Action.AUDIT)
PASSED = RuleResult(POLICY, "autogen", Outcome.PASS, "", Action.AUDIT)


@pytest.fixture
def lines(caplog):
    caplog.set_level(logging.INFO, logger=LOG.name)
    return lambda: [r for r in caplog.records if r.name == LOG.name]


def test_a_warning_repeated_within_the_window_is_folded_and_counted(lines, monkeypatch):
    clock = iter([100.0, 101.0, 102.0, 103.0, 170.0])
    monkeypatch.setattr("webhook.observability.logs.time.monotonic", lambda: next(clock))
    repeats = RepeatWindow(seconds=60)
    for i in range(5):
        log_admission(LOG, "validate", _request(name=f"web-{i}"), _verdict(WARNED), 0.001, repeats)
    logged = lines()
    assert [r.object_name for r in logged] == ["web-0", "web-4"]
    assert logged[0].getMessage().endswith("Running as root is not allowed.")
    assert logged[1].folded == 3 and "(and 3 more like it in 60s, not logged)" in logged[1].getMessage()
    assert json.loads(JsonFormatter().format(logged[1]))["folded"] == 3


def test_another_namespace_or_rule_is_a_finding_of_its_own(lines):
    repeats = RepeatWindow(seconds=60)
    log_admission(LOG, "validate", _request("team-a"), _verdict(WARNED), 0.001, repeats)
    log_admission(LOG, "validate", _request("team-b"), _verdict(WARNED), 0.001, repeats)
    from dataclasses import replace
    log_admission(LOG, "validate", _request("team-a"), _verdict(replace(WARNED, rule="other")), 0.001, repeats)
    assert [(r.namespace, r.rule) for r in lines()] == [("team-a", "autogen"), ("team-b", "autogen"), ("team-a", "other")]


def test_denials_and_errors_are_never_folded(lines):
    repeats = RepeatWindow(seconds=60)
    for _ in range(3):
        log_admission(LOG, "validate", _request(), _verdict(DENIED), 0.001, repeats)
        log_admission(LOG, "validate", _request(), _verdict(ERRORED), 0.001, repeats)
    assert [(r.verdict, r.result) for r in lines()] == [("denied", "fail"), ("allowed", "error")] * 3


def test_a_passing_admission_writes_nothing_at_info(lines):
    log_admission(LOG, "validate", _request(), _verdict(PASSED), 0.001, RepeatWindow())
    assert lines() == []


def test_debug_logs_every_admission_and_result_unfolded(caplog):
    caplog.set_level(logging.DEBUG, logger=LOG.name)
    repeats = RepeatWindow(seconds=60)
    for _ in range(2):
        log_admission(LOG, "validate", _request(), _verdict(WARNED, PASSED), 0.001, repeats)
    records = [r for r in caplog.records if r.name == LOG.name]
    assert len(records) == 6  # per admission: the admission, the warning, the pass


def test_the_window_forgets_findings_beyond_its_bound():
    repeats = RepeatWindow(seconds=60, max_keys=3)
    assert [repeats.take((str(i),), 1.0) for i in range(3)] == [0, 0, 0]
    assert repeats.take(("0",), 2.0) is None
    assert repeats.take(("new",), 2.0) == 0  # a fourth key: the windows start afresh rather than grow
    assert repeats.take(("0",), 3.0) == 0 and len(repeats._seen) == 2


def test_debug_logs_an_admission_that_no_policy_had_a_say_in(caplog):
    caplog.set_level(logging.DEBUG, logger=LOG.name)
    log_admission(LOG, "validate", _request(), _verdict(), 0.001, RepeatWindow())
    assert [r.getMessage() for r in caplog.records if r.name == LOG.name] == ["validate allowed"]
