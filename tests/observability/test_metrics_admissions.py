"""The admission counter and latency histogram, counted in plain dicts, expose exactly what prometheus_client's own
Counter and Histogram expose for the same admissions."""

from __future__ import annotations

import random

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from webhook.observability.metrics import LATENCY_BUCKETS, PREFIX, Metrics


def _samples(text: str, prefix: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for family in text_string_to_metric_families(text)
            for s in family.samples if s.name.startswith(prefix)}


def test_the_same_exposition_as_prometheus_clients_own_metrics() -> None:
    rng = random.Random(12)
    metrics = Metrics()
    registry = CollectorRegistry()
    requests = Counter(f"{PREFIX}_admission_requests", "x", ["endpoint", "operation", "kind", "verdict"], registry=registry)
    latency = Histogram(f"{PREFIX}_admission_duration_seconds", "x", ["endpoint"], buckets=LATENCY_BUCKETS,
                        registry=registry)
    # every bound exactly (an observation equal to a bound is in that bucket), between them, beyond the last
    values = [*LATENCY_BUCKETS, *(rng.uniform(0, 12) for _ in range(500)), *(10 ** rng.uniform(-6, 2) for _ in range(500)),
              0.0, 1e9]
    for n, seconds in enumerate(values):
        labels = (rng.choice(["mutate", "validate"]), rng.choice(["CREATE", "UPDATE", "DELETE"]),
                  rng.choice(["Pod", "PersistentVolumeClaim"]), rng.choice(["allowed", "denied"]))
        metrics.admission(*labels, seconds)
        requests.labels(*labels).inc()
        latency.labels(labels[0]).observe(seconds)
        if n % 300 == 0:  # scraped along the way: counts go on from where they were
            assert _samples(metrics.exposition().decode(), f"{PREFIX}_admission") == \
                _samples(generate_latest(registry).decode(), f"{PREFIX}_admission")
    ours = _samples(metrics.exposition().decode(), f"{PREFIX}_admission")
    assert ours == _samples(generate_latest(registry).decode(), f"{PREFIX}_admission")
    assert ours[(f"{PREFIX}_admission_duration_seconds_bucket", (("endpoint", "validate"), ("le", "0.001")))] >= 1
    assert sum(v for (name, _), v in ours.items() if name.endswith("_requests_total")) == len(values)


def test_nothing_counted_exposes_the_families_without_samples() -> None:
    text = Metrics().exposition().decode()
    assert f"# TYPE {PREFIX}_admission_requests_total counter" in text
    assert f"# TYPE {PREFIX}_admission_duration_seconds histogram" in text
    assert f"{PREFIX}_admission_duration_seconds_bucket" not in text
