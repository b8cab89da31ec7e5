"""The refresher's own Prometheus metrics, on a registry of its own (several refreshers in one test process)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest


class RefresherMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.refreshes = Counter("quartermaster_token_refreshes", "Token refresh attempts, by grant and result",
                                 ["grant", "result"], registry=self.registry)
        self.expiry = Gauge("quartermaster_token_expiry_timestamp_seconds",
                            "When the token in the token file expires (Unix time)", registry=self.registry)
        self.last_success = Gauge("quartermaster_token_last_refresh_timestamp_seconds",
                                  "When the token file was last written (Unix time)", registry=self.registry)
        self.consecutive_failures = Gauge("quartermaster_token_refresh_consecutive_failures",
                                          "IdP errors since the last successful refresh", registry=self.registry)
        self.ready = Gauge("quartermaster_token_ready", "1 while the token file holds an unexpired token",
                           registry=self.registry)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
