"""Admission and policy metrics through the OpenTelemetry SDK, exposed as Prometheus text.

Each Metrics object owns its own Prometheus registry, so several servers in one process
(tests, `apply`) never mix their counts.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Iterable

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
from opentelemetry.sdk.resources import Resource
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CONTENT_TYPE = CONTENT_TYPE_LATEST


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        reader = PrometheusMetricReader(registry=self.registry, disable_target_info=True, scope_info_enabled=False)
        self._provider = MeterProvider(
            resource=Resource.create({"service.name": "quartermaster"}),
            metric_readers=[reader],
            views=[View(instrument_name="quartermaster_admission_duration_seconds",
                        aggregation=ExplicitBucketHistogramAggregation(LATENCY_BUCKETS))],
        )
        meter = self._provider.get_meter("quartermaster")
        self._requests = meter.create_counter(
            "quartermaster_admission_requests", description="Admission reviews answered, by endpoint, operation, kind and verdict")
        self._latency = meter.create_histogram(
            "quartermaster_admission_duration_seconds", unit="s", description="Time to answer one admission review")
        self._rule_results = meter.create_counter(
            "quartermaster_policy_results", description="Policy rule results, by policy, rule and result")
        self._load_errors = meter.create_counter(
            "quartermaster_policy_load_errors", description="Policy documents refused on load or reload")
        self._malformed = meter.create_counter(
            "quartermaster_malformed_requests", description="Requests refused with HTTP 4xx before evaluation")
        self._dropped = meter.create_counter(
            "quartermaster_reports_dropped", description="Policy results dropped because the report queue was full")
        # counts add up here and reach the OpenTelemetry counters when metrics are read (a scrape): an SDK
        # counter add costs ~6-12 us (attribute hashing, locks), a dict increment well under one
        self._pending: Counter[tuple[str, ...]] = Counter()
        self._pending_lock = threading.Lock()
        self._policy_errors_now = 0
        self._snapshot_generation = 0
        meter.create_observable_gauge(
            "quartermaster_policy_load_failing", callbacks=[self._observe_failing],
            description="1 while the last policy load was refused (an older snapshot is serving)")
        meter.create_observable_gauge(
            "quartermaster_policy_snapshot_generation", callbacks=[self._observe_generation],
            description="Generation of the policy snapshot in service")

    def _observe_failing(self, _: CallbackOptions) -> Iterable[Observation]:
        yield Observation(1 if self._policy_errors_now else 0)

    def _observe_generation(self, _: CallbackOptions) -> Iterable[Observation]:
        yield Observation(self._snapshot_generation)

    def admission(self, endpoint: str, operation: str, kind: str, verdict: str, seconds: float) -> None:
        self._pending[("request", endpoint, operation, kind, verdict)] += 1
        self._latency.record(seconds, {"endpoint": endpoint})

    def rule_result(self, policy: str, rule: str, result: str, policy_kind: str = "") -> None:
        """`policy` as users name it ("name" or "namespace/name"); `policy_kind` tells same-named kinds apart."""
        self._pending[("rule", policy, policy_kind, rule, result)] += 1

    def policy_load(self, errors: int, generation: int) -> None:
        if errors:
            self._load_errors.add(errors)
        self._policy_errors_now = errors
        if not errors:
            self._snapshot_generation = generation

    def malformed(self, endpoint: str, status: int) -> None:
        self._malformed.add(1, {"endpoint": endpoint, "status": str(status)})

    def report_dropped(self, count: int = 1) -> None:
        self._dropped.add(count)

    def flush(self) -> None:
        """Hand the counts gathered since the last read to the OpenTelemetry counters."""
        with self._pending_lock:
            pending, self._pending = self._pending, Counter()
        for key, count in pending.items():
            if key[0] == "request":
                attrs = dict(zip(("endpoint", "operation", "kind", "verdict"), key[1:]))
                self._requests.add(count, attrs)
            else:
                self._rule_results.add(count, dict(zip(("policy", "policy_kind", "rule", "result"), key[1:])))

    def exposition(self) -> bytes:
        self.flush()
        return generate_latest(self.registry)

    def shutdown(self) -> None:
        self.flush()
        self._provider.shutdown()
