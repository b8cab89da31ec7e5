"""The standalone result sink keeps exactly what a bounded deque of entries would: the latest results."""

from collections import deque

from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.model.policy import PolicyId
from webhook.model.results import passed
from webhook.reports.sink import MemoryResultSink, ResourceRef


def _results(count: int, tag: int):
    return tuple(passed(PolicyId("ValidatingPolicy", "", f"p{tag}-{i}"), "rule") for i in range(count))


@settings(max_examples=200, deadline=None)
@given(capacity=st.integers(0, 12), sizes=st.lists(st.integers(0, 7), max_size=25))
def test_keeps_the_latest_capacity_results_oldest_first(capacity, sizes):
    sink, expected = MemoryResultSink(capacity), deque(maxlen=capacity)
    for n, size in enumerate(sizes):
        ref = ResourceRef("v1", "Pod", "ns", f"pod-{n}", f"uid-{n}")
        results = _results(size, n)
        sink.submit(ref, results)
        expected.extend((ref, r) for r in results)
        assert [(e.resource, e.result) for e in sink.entries] == list(expected)
    assert sink._held - (len(sink._batches[0][1]) if sink._batches else 0) < max(capacity, 1)  # memory stays bounded


def test_entries_of_one_admission_share_its_resource_and_time():
    sink = MemoryResultSink()
    ref = ResourceRef("v1", "Pod", "ns", "p", "u")
    sink.submit(ref, _results(3, 0))
    entries = sink.entries
    assert {e.resource for e in entries} == {ref} and len({e.timestamp for e in entries}) == 1
