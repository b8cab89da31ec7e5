"""Which results an admission logs at info: the fast filter agrees with the rule, result by result."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.model.results import Action, Outcome, PolicyId, RuleResult
from webhook.observability import logs
from webhook.observability.logs import RepeatWindow, _flagged

_POLICIES = [PolicyId("policies.kyverno.io/v1", "ValidatingPolicy", "a"), PolicyId("v1", "ProfileQuota", "b")]
result = st.builds(RuleResult, st.sampled_from(_POLICIES), st.sampled_from(["r", "s"]), st.sampled_from(list(Outcome)),
                   st.just("m"), st.sampled_from(list(Action)))


def _reference(results, namespace, repeats):
    """The rule as written before the fast path: every result looked at."""
    lines = []
    for r in results:
        if r.blocks or r.outcome is Outcome.ERROR:
            lines.append((r, 0))
        elif r.reported:
            if repeats is None:
                lines.append((r, 0))
                continue
            folded = repeats.take((r.policy, r.rule, namespace), 5.0)
            if folded is not None:
                lines.append((r, folded))
    return lines


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(result, max_size=8), max_size=5), st.booleans())
def test_the_results_logged_are_those_the_rule_names(admissions, folding):
    ours, theirs = (RepeatWindow() if folding else None), (RepeatWindow() if folding else None)
    real, logs.time.monotonic = logs.time.monotonic, lambda: 5.0
    try:
        for results in admissions:
            assert _flagged(tuple(results), "ns", ours) == _reference(tuple(results), "ns", theirs)
    finally:
        logs.time.monotonic = real


def test_passes_are_never_logged_but_everything_else_is_looked_at():
    passed = RuleResult(_POLICIES[0], "r", Outcome.PASS, "", Action.ENFORCE)
    errored = RuleResult(_POLICIES[0], "r", Outcome.ERROR, "boom", Action.AUDIT)
    warned = RuleResult(_POLICIES[1], "r", Outcome.WARN, "careful", Action.ENFORCE)
    assert _flagged((passed, errored, passed, warned), "ns", None) == [(errored, 0), (warned, 0)]
