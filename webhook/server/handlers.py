"""HTTP handlers: decode, hand to the engine, encode. Nothing here decides admission."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Awaitable, Callable

import orjson
from aiohttp import web

from webhook.engine import AdmissionEngine
from webhook.engine.dispatch import DEFAULT_BUDGET
from webhook.model.cluster import ClusterState
from webhook.model.errors import MalformedReview
from webhook.model.quickinit import frozen_dataclass
from webhook.model.review import AdmissionRequest, encode_response, parse_review
from webhook.model.verdict import Verdict
from webhook.observability.logs import RepeatWindow, log_admission
from webhook.observability.metrics import CONTENT_TYPE, Metrics
from webhook.observability.tracing import Tracing
from webhook.policy.snapshot import PolicyStore
from webhook.server.guard import CLIENT_CERT_REQUIRED, LIMITS
from webhook.server.timeouts import evaluation_budget

log = logging.getLogger("quartermaster.admission")


def _dumps(obj: object) -> bytes:
    try:
        return orjson.dumps(obj)
    except TypeError:  # an integer beyond 64 bits (a huge number in a warning is still a number)
        return json.dumps(obj, separators=(",", ":")).encode()


MAX_BODY = 3 * 1024 * 1024  # the API server's own limit on an AdmissionReview


@frozen_dataclass
class Services:
    """What the handlers need, built once by the composition root."""

    engine: AdmissionEngine
    store: PolicyStore
    state: ClusterState
    metrics: Metrics
    tracing: Tracing


def _http_reason(exc: Exception) -> str:
    """aiohttp's parser errors carry the reason as `message` below the exception that reports them."""
    cause = exc.__cause__ or exc
    return str(getattr(cause, "message", "") or cause).strip()


def _bad_request(metrics: Metrics, endpoint: str, status: int, reason: str) -> web.Response:
    metrics.malformed(endpoint, status)
    log.warning("refused request: %s", reason, extra={"endpoint": endpoint})
    return web.json_response({"error": reason}, status=status)


def _closing(response: web.Response) -> web.Response:
    """The response, with the connection closed after it."""
    response.force_close()
    return response


def admission_handler(services: Services, endpoint: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    repeats = RepeatWindow()
    span_name = f"admission.{endpoint}"

    async def evaluate(request: AdmissionRequest, budget: float) -> Verdict:
        if endpoint == "mutate":
            return (await services.engine.mutate(request, budget)).verdict
        return await services.engine.validate(request, budget)

    async def decode(http: web.Request) -> AdmissionRequest | web.Response:
        limits = http.app[LIMITS]
        if http.app[CLIENT_CERT_REQUIRED] and not (http.transport and http.transport.get_extra_info("peercert")):
            # the TLS layer verified any certificate presented; none presented is not the API server
            return _bad_request(services.metrics, endpoint, 401, "a client certificate signed by the --client-ca CA is required")
        try:
            if http.content.is_eof():  # the whole body came with the headers (most reviews): nothing to wait for
                body = await http.read()
            else:
                async with asyncio.timeout(limits.body_seconds):
                    body = await http.read()
        except web.HTTPRequestEntityTooLarge:
            return _bad_request(services.metrics, endpoint, 413, f"body larger than {MAX_BODY} bytes (3 MiB)")
        # the body was not read whole, so what follows on the connection is not a next request: close it
        except asyncio.TimeoutError:  # the rest of a stalled body is not worth waiting for
            return _closing(_bad_request(services.metrics, endpoint, 408,
                                        f"body not received within {limits.body_seconds:g}s"))
        except web.RequestPayloadError as exc:  # a Content-Encoding that does not decode, a broken chunk
            return _closing(_bad_request(services.metrics, endpoint, 400, f"body could not be read: {_http_reason(exc)}"))
        except ConnectionError:  # the client left mid-body: nobody to answer, and not the webhook's error
            return _closing(_bad_request(services.metrics, endpoint, 400,
                                        "connection closed before the body was complete"))
        try:
            if len(body) > limits.thread_decode_bytes:
                # parsing and shape checks of a big body run beside the loop, which keeps answering meanwhile
                return await asyncio.to_thread(parse_review, body)
            return parse_review(body)
        except MalformedReview as exc:
            return _bad_request(services.metrics, endpoint, 400, str(exc))

    async def handle(http: web.Request) -> web.Response:
        started = time.perf_counter()
        request = await decode(http)
        if isinstance(request, web.Response):
            await asyncio.sleep(http.app[LIMITS].refusal_delay_seconds)  # a tarpit for floods of bad input
            return request
        budget = evaluation_budget(http.query.get("timeout"), DEFAULT_BUDGET)
        if services.tracing.enabled:
            with services.tracing.span(span_name, uid=request.uid, kind=request.kind.kind,
                                       operation=request.operation, namespace=request.namespace):
                verdict = await evaluate(request, budget)
        else:  # no exporter (the default): the span would be a nullcontext, its attributes built for nothing
            verdict = await evaluate(request, budget)
        seconds = time.perf_counter() - started
        outcome = "allowed" if verdict.allowed else "denied"
        services.metrics.admission(endpoint, request.operation, request.kind.kind, outcome, seconds)
        services.metrics.rule_results(request, verdict.results)
        log_admission(log, endpoint, request, verdict, seconds, repeats)
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
