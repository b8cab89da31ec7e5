"""HTTP handlers: decode, hand to the engine, encode. Nothing here decides admission."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Awaitable, Callable

from aiohttp import web

from webhook.engine import AdmissionEngine
from webhook.engine.dispatch import DEFAULT_BUDGET
from webhook.model.cluster import ClusterState
from webhook.model.errors import MalformedReview
from webhook.model.review import AdmissionRequest, encode_response, parse_review
from webhook.model.verdict import Verdict
from webhook.observability.metrics import CONTENT_TYPE, Metrics
from webhook.observability.tracing import Tracing
from webhook.policy.snapshot import PolicyStore
from webhook.server.timeouts import evaluation_budget

log = logging.getLogger("quartermaster.admission")


class _Sampler:
    """Admissions are logged at info at most once a second per endpoint, the rest at debug; denials and
    errors always at info. A JSON log line per admitted request cost ~5 % of throughput at saturation."""

    def __init__(self, interval: float = 1.0) -> None:
        self.interval = interval
        self._next = 0.0

    def level(self, now: float) -> int:
        if now >= self._next:
            self._next = now + self.interval
            return logging.INFO
        return logging.DEBUG


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()

MAX_BODY = 3 * 1024 * 1024  # the API server's own limit on an AdmissionReview


@dataclass(frozen=True)
class Services:
    """What the handlers need, built once by the composition root."""

    engine: AdmissionEngine
    store: PolicyStore
    state: ClusterState
    metrics: Metrics
    tracing: Tracing


def _bad_request(metrics: Metrics, endpoint: str, status: int, reason: str) -> web.Response:
    metrics.malformed(endpoint, status)
    log.warning("refused request: %s", reason, extra={"endpoint": endpoint})
    return web.json_response({"error": reason}, status=status)


def admission_handler(services: Services, endpoint: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def evaluate(request: AdmissionRequest, budget: float) -> Verdict:
        if endpoint == "mutate":
            return (await services.engine.mutate(request, budget)).verdict
        return await services.engine.validate(request, budget)

    sampler = _Sampler()

    async def handle(http: web.Request) -> web.Response:
        started = time.perf_counter()
        try:
            body = await http.read()
        except web.HTTPRequestEntityTooLarge:
            return _bad_request(services.metrics, endpoint, 413, f"body larger than {MAX_BODY} bytes (3 MiB)")
        try:
            request = parse_review(body)
        except MalformedReview as exc:
            return _bad_request(services.metrics, endpoint, 400, str(exc))
        budget = evaluation_budget(http.query.get("timeout"), DEFAULT_BUDGET)
        with services.tracing.span(f"admission.{endpoint}", uid=request.uid, kind=request.kind.kind,
                                   operation=request.operation, namespace=request.namespace):
            verdict = await evaluate(request, budget)
        seconds = time.perf_counter() - started
        outcome = "allowed" if verdict.allowed else "denied"
        services.metrics.admission(endpoint, request.operation, request.kind.kind, outcome, seconds)
        for result in verdict.results:
            services.metrics.rule_result(result.policy.qualified_name, result.rule, result.outcome.value, result.policy.kind)
        level = sampler.level(started) if verdict.allowed else logging.INFO
        if log.isEnabledFor(level):
            log.log(level, "%s %s", endpoint, outcome, extra={
                "uid": request.uid, "kind": request.kind.kind, "namespace": request.namespace,
                "object_name": request.object_name, "operation": request.operation, "verdict": outcome,
                "duration_ms": round(seconds * 1000, 2), "endpoint": endpoint})
        return web.Response(body=_dumps(encode_response(request.uid, verdict)), content_type="application/json")

    return handle


def health_handlers(services: Services) -> dict[str, Callable[[web.Request], Awaitable[web.Response]]]:
    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(_: web.Request) -> web.Response:
        status = services.store.status
        errors = [str(e) for e in status.errors]
        body = {
            "policiesLoaded": status.loaded,
            "policyGeneration": services.store.snapshot.generation,
            "stateSynced": services.state.synced,
            # a refused reload leaves the previous policies serving: degraded, still ready, so that a bad
            # ConfigMap edit never takes every replica out of the Service at once
            "policyErrors": errors,
        }
        details = getattr(services.state, "sync_details", None)  # live mode: per-kind informer state
        if callable(details):
            body["stateDetails"] = details()
        ready = status.loaded and services.state.synced
        body["status"] = ("degraded" if errors else "ready") if ready else "unready"
        return web.json_response(body, status=200 if ready else 503)

    async def metrics(_: web.Request) -> web.Response:
        response = web.Response(body=services.metrics.exposition())
        response.headers["Content-Type"] = CONTENT_TYPE
        return response

    return {"healthz": healthz, "readyz": readyz, "metrics": metrics}
