"""verdict_of walks the results once; what it builds must be what the plain definition says, in the same order
(warnings as the user reads them, annotations as the API server records them)."""

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.engine.verdicts import STATUS_CODES, verdict_of
from webhook.model.results import Action, Outcome, PolicyId, RuleResult
from webhook.model.kubetext import annotation_key, clean_warning
from webhook.model.verdict import Verdict

_names = st.sampled_from(["a", "b", "team/c", "quota"])
_results = st.builds(
    RuleResult,
    policy=st.builds(PolicyId, st.just("v1"), st.sampled_from(["ValidatingPolicy", "ClusterPolicy"]), _names),
    rule=st.sampled_from(["", "r", "gpus"]),
    outcome=st.sampled_from(list(Outcome)),
    message=st.sampled_from(["", "no", "too many GPUs", "x" * 200]),
    action=st.sampled_from(list(Action)),
    reason=st.sampled_from(["", "Invalid", "Forbidden", "Odd"]),
    audit=st.lists(st.tuples(st.sampled_from(["k", "r.gpus", "b"]), st.sampled_from(["v", "w"])), max_size=2).map(tuple),
)


def _defined(results: tuple[RuleResult, ...], warnings: list[str]) -> Verdict:
    """The definition, as verdict_of read before it became one pass."""
    blocking = [r for r in results if r.blocks]
    reported = [r for r in results if r.reported]
    texts = [clean_warning(w) for w in warnings] + [r.warning_text for r in reported]
    annotations = {r.annotation_key: r.message for r in reported}
    annotations.update({annotation_key(r.policy.qualified_name, key): value for r in results for key, value in r.audit})
    verdict = Verdict(True, warnings=tuple(dict.fromkeys(texts)), audit_annotations=annotations, results=results)
    if blocking:
        message = "; ".join(f"[{r.policy.qualified_name}{'/' + r.rule if r.rule else ''}] {r.message}" for r in blocking)
        reason = next((r.reason for r in blocking if r.reason), "Forbidden")
        return replace(verdict, allowed=False, code=STATUS_CODES.get(reason, 403), reason=reason, message=message)
    return verdict


@settings(max_examples=400, deadline=None)
@given(st.lists(_results, max_size=12).map(tuple), st.lists(st.sampled_from(["w", "w\nx", "ok"]), max_size=3))
def test_the_verdict_is_the_definitions_in_the_same_order(results, warnings):
    got, want = verdict_of(results, warnings), _defined(results, warnings)
    assert got == want
    assert list(got.audit_annotations.items()) == list(want.audit_annotations.items())
