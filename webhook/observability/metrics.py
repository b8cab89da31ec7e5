"""Prometheus metrics of admission, policies and the process, as `GET /metrics` serves them.

Each Metrics object owns its own registry, so several servers in one process (tests, `apply`) never
mix their counts. The request path only increments children that were bound to their label values
once (`_Bound`): no label validation, lock or attribute hashing per admission beyond one dict lookup.
A request's kind and namespace are bounded (observability/labels.py) before they become label values.
Every metric is listed in README.md ("Metrics"); the chart's Grafana dashboard uses them.
"""

from __future__ import annotations

import platform
from bisect import bisect_left
from collections import Counter as Tally
from collections import _count_elements  # type: ignore[attr-defined]  # Counter.update's own loop, in C
from operator import attrgetter
from typing import Any, Iterable, Iterator

from prometheus_client import (CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, disable_created_metrics,
                               generate_latest)
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString

from webhook import __version__
from webhook.model.results import RuleResult
from webhook.model.review import AdmissionRequest
from webhook.observability.labels import NamespaceDirectory, RequestLabels

LAG_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CONTENT_TYPE = CONTENT_TYPE_LATEST
PREFIX = "quartermaster"
_COUNTED_AS = attrgetter("counted_as")
# `_created` series double every counter for no dashboard in use; Kyverno and OpenTelemetry expose none
disable_created_metrics()


class _Bound:
    """Children of one labelled metric, bound once per distinct label values and kept."""

    def __init__(self, metric: Any) -> None:
        self._metric = metric
        self._children: dict[tuple[str, ...], Any] = {}

    def __call__(self, *values: str) -> Any:
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = self._metric.labels(*values)
        return child


class _Admissions:
    """The admission counter and latency histogram, counted in plain dicts as reviews are answered and made
    metric families when scraped. prometheus_client's children take a lock per increment and its histogram
    walks the buckets in Python per observation: together five times what these dicts cost, on every review.
    Counted and scraped on the event loop only, so nothing here needs a lock."""

    def __init__(self) -> None:
        self.requests: dict[tuple[str, str, str, str], int] = {}
        # endpoint -> a count per bucket of LATENCY_BUCKETS (each observation in the first bucket it fits;
        # the last counts those above every bound), then the sum of the observed seconds
        self.latency: dict[str, list[float]] = {}

    def count(self, endpoint: str, operation: str, kind: str, verdict: str, seconds: float) -> None:
        key = (endpoint, operation, kind, verdict)
        self.requests[key] = self.requests.get(key, 0) + 1
        buckets = self.latency.get(endpoint)
        if buckets is None:
            buckets = self.latency[endpoint] = [0.0] * (len(LATENCY_BUCKETS) + 2)
        buckets[bisect_left(LATENCY_BUCKETS, seconds)] += 1  # le: the first bound at or above the value
        buckets[-1] += seconds

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(f"{PREFIX}_admission_requests",
                                       "Admission reviews answered, by endpoint, operation, kind and verdict",
                                       labels=["endpoint", "operation", "kind", "verdict"])
        for key, value in self.requests.items():
            requests.add_metric(list(key), value)
        yield requests
        latency = HistogramMetricFamily(f"{PREFIX}_admission_duration_seconds", "Time to answer one admission review, "
                                        "by endpoint", labels=["endpoint"])
        for endpoint, buckets in self.latency.items():
            cumulative, total = [], 0.0
            for bound, count in zip((*LATENCY_BUCKETS, float("inf")), buckets):
                total += count
                cumulative.append((floatToGoString(bound), total))
            latency.add_metric([endpoint], cumulative, sum_value=buckets[-1])
        yield latency


class Metrics:
    def __init__(self, namespaces: NamespaceDirectory | None = None) -> None:
        """`namespaces`: the cluster state, which vouches for namespace labels (or attach_namespaces later)."""
        self._labels = RequestLabels(namespaces)
        self.registry = registry = CollectorRegistry(auto_describe=True)
        # process_resident_memory_bytes, process_cpu_seconds_total, process_open_fds, process_max_fds,
        # process_start_time_seconds, process_virtual_memory_bytes (from /proc, read at scrape time)
        ProcessCollector(registry=registry)
        Gauge(f"{PREFIX}_build_info", "Always 1; the labels say which build is running",
              ["version", "python_version"], registry=registry).labels(__version__, platform.python_version()).set(1)
        self._admissions = _Admissions()
        registry.register(self._admissions)
        self._rule_results = _Bound(Counter(
            f"{PREFIX}_policy_results", "Policy rule results of admissions, labelled as Kyverno labels its own",
            ["policy", "policy_kind", "rule", "result", "mode", "resource_kind", "resource_namespace"], registry=registry))
        # results counted since the last scrape, by (resource kind, namespace), then by the result's
        # (policy, policy kind, rule, outcome, action): no more keys than the labelled children they become
        self._pending_results: dict[tuple[str, str], Tally[tuple[str, ...]]] = {}
        self._load_errors = Counter(f"{PREFIX}_policy_load_errors", "Policy documents refused on load or reload",
                                    registry=registry)
        self._malformed = _Bound(Counter(
            f"{PREFIX}_malformed_requests",
            "Requests refused with HTTP 4xx before evaluation, by endpoint (http: refused by the HTTP parser) and status",
            ["endpoint", "status"], registry=registry))
        self._dropped = Counter(f"{PREFIX}_reports_dropped", "Policy results dropped because the report queue was full",
                                registry=registry)
        self._failing = Gauge(f"{PREFIX}_policy_load_failing",
                              "1 while the last policy load was refused (an older snapshot is serving)", registry=registry)
        self._loop_lag = Histogram(f"{PREFIX}_event_loop_lag_seconds",
                                   "How late the event loop ran a timer: the longest any request waited behind other work",
                                   buckets=LAG_BUCKETS, registry=registry)
        self._loop_lag_max = 0.0
        Gauge(f"{PREFIX}_event_loop_lag_max_seconds", "Largest event-loop lag since the previous scrape",
              registry=registry).set_function(self._take_lag_max)
        self._connections_closed = _Bound(Counter(
            f"{PREFIX}_connections_closed", "Connections the server closed, by reason (timeouts, cap)", ["reason"],
            registry=registry))
        self._broken = Gauge(f"{PREFIX}_policies_broken", "Policies in service that do not compile: each answers every "
                             "request it matches with its failure policy (listed in /readyz)", registry=registry)
        self._generation = Gauge(f"{PREFIX}_policy_snapshot_generation", "Generation of the policy snapshot in service",
                                 registry=registry)

    def _take_lag_max(self) -> float:
        value, self._loop_lag_max = self._loop_lag_max, 0.0
        return value

    def attach_namespaces(self, namespaces: NamespaceDirectory) -> None:
        """The cluster state, once built: live mode builds its state with these metrics, so it comes after them."""
        self._labels.attach(namespaces)

    def loop_lag(self, seconds: float) -> None:
        self._loop_lag.observe(seconds)
        self._loop_lag_max = max(self._loop_lag_max, seconds)

    def connection_closed(self, reason: str) -> None:
        self._connections_closed(reason).inc()

    def admission(self, endpoint: str, operation: str, kind: str, verdict: str, seconds: float) -> None:
        self._admissions.count(endpoint, operation, RequestLabels.kind(kind), verdict, seconds)

    def rule_results(self, request: AdmissionRequest, results: Iterable[RuleResult]) -> None:
        """One count per rule result of an admission. `policy` as users name it ("name" or "namespace/name"),
        `policy_kind` tells same-named kinds apart; `mode` is enforce or audit (what a failure does).
        Counted here in plain Counters, keyed by the result's label values, and labelled at scrape time: with
        a score of policies, labelling and incrementing each result was most of what metrics cost."""
        if not results:  # nothing to count (most /mutate reviews): not even a scope
            return
        scope = (RequestLabels.kind(request.kind.kind), self._labels.namespace(request.namespace))
        counts = self._pending_results.get(scope)
        if counts is None:
            counts = self._pending_results[scope] = Tally()
        # counted in C (Counter.update's own helper, without its Python checks of what it is given); a Python loop
        # building a (labels, kind, namespace) key per result cost twice it
        _count_elements(counts, map(_COUNTED_AS, results))

    def _flush_results(self) -> None:
        pending, self._pending_results = self._pending_results, {}
        for (kind, namespace), counts in pending.items():
            for (policy, policy_kind, rule, outcome, action), count in counts.items():
                self._rule_results(policy, policy_kind, rule, outcome, action.lower(), kind, namespace).inc(count)

    def policy_load(self, errors: int, generation: int, broken: int = 0) -> None:
        """`broken`: policies of the snapshot in service kept with a compile error."""
        if errors:
            self._load_errors.inc(errors)
        self._failing.set(1 if errors else 0)
        self._broken.set(broken)
        if not errors:
            self._generation.set(generation)

    def malformed(self, endpoint: str, status: int) -> None:
        self._malformed(endpoint, str(status)).inc()

    def report_dropped(self, count: int = 1) -> None:
        self._dropped.inc(count)

    def exposition(self) -> bytes:
        self._flush_results()
        return generate_latest(self.registry)

    def shutdown(self) -> None:
        """Nothing runs in the background: kept so that callers stop every service the same way."""
