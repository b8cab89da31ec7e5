"""Rule results counted per admission and labelled at scrape time: the series are exactly one count per result."""

from __future__ import annotations

from collections import defaultdict
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from webhook.model.results import Action, Outcome, PolicyId, RuleResult
from webhook.observability.metrics import Metrics

_POLICIES = [PolicyId("policies.kyverno.io/v1", "ValidatingPolicy", "a"), PolicyId("v1", "ProfileQuota", "a"),
             PolicyId("kyverno.io/v1", "Policy", "b", namespace="team")]
result = st.builds(RuleResult, st.sampled_from(_POLICIES), st.sampled_from(["r", "s"]), st.sampled_from(list(Outcome)),
                   st.just("m"), st.sampled_from(list(Action)))
admission = st.tuples(st.sampled_from(["Pod", "PersistentVolumeClaim"]), st.sampled_from(["", "apps", "user000"]),
                      st.lists(result, max_size=5), st.booleans())


class _Namespaces:
    """The cluster state as the metrics ask it: these namespaces exist."""

    def get(self, kind, namespace, name):
        return {"metadata": {"name": name}} if kind == "Namespace" and name in ("apps", "user000") else None


def _series(metrics: Metrics) -> dict[tuple[tuple[str, str], ...], float]:
    found = {}
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for sample in family.samples:
            if sample.name == "quartermaster_policy_results_total":
                found[tuple(sorted(sample.labels.items()))] = sample.value
    return found


@settings(max_examples=150, deadline=None)
@given(st.lists(admission, max_size=12))
def test_every_result_is_one_count_under_its_labels(admissions):
    metrics, expected = Metrics(_Namespaces()), defaultdict(float)
    for kind, namespace, results, scrape in admissions:
        metrics.rule_results(SimpleNamespace(kind=SimpleNamespace(kind=kind), namespace=namespace), tuple(results))
        for r in results:
            expected[tuple(sorted({"policy": r.policy.qualified_name, "policy_kind": r.policy.kind, "rule": r.rule,
                                   "result": r.outcome.value, "mode": r.action.value.lower(), "resource_kind": kind,
                                   "resource_namespace": namespace}.items()))] += 1
        if scrape:  # counts survive a scrape and go on from where they were
            assert _series(metrics) == expected
    assert _series(metrics) == expected
