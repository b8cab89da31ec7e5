"""HTTP handlers: decode, hand to the engine, encode. Nothing here decides admission."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import Counter
from typing import Awaitable, Callable

import orjson
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

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
from webhook.policy.object_check import PolicyObjectCheck
from webhook.server.guard import CLIENT_CERT_REQUIRED
from webhook.server.limits import ServerLimits
from webhook.server.timeouts import evaluation_budget

log = logging.getLogger("quartermaster.admission")


def json_bytes(obj: object) -> bytes:
    try:
        return orjson.dumps(obj)
    except TypeError:  # an integer beyond 64 bits (a huge number in a warning is still a number)
        return json.dumps(obj, separators=(",", ":")).encode()


# the endpoints an AdmissionReview is posted to: the engine's two, and the policy objects' check
POLICY_ENDPOINT = "validate-policy"
ADMISSION_ENDPOINTS = ("mutate", "validate", POLICY_ENDPOINT)
MAX_BODY = 3 * 1024 * 1024  # the API server's own limit on an AdmissionReview
MAX_LISTED = 50  # broken policies /readyz names (policy objects may be many); brokenPolicyCount has them all


@frozen_dataclass
class Services:
    """What the handlers need, built once by the composition root."""

    engine: AdmissionEngine
    store: PolicyStore
    state: ClusterState
    metrics: Metrics
    tracing: Tracing
    # policy objects judged as they are applied (/validate-policy: webhook.policy.object_check)
    policy_check: PolicyObjectCheck


def _http_reason(exc: Exception) -> str:
    """aiohttp's parser errors carry the reason as `message` below the exception that reports them."""
    cause = exc.__cause__ or exc
    if isinstance(cause, HttpProcessingError) and cause.message:
        return str(cause.message).strip()
    return str(cause).strip()


CLIENT_CERT_REASON = "a client certificate signed by the --client-ca CA is required"
INTERNAL_ERROR = "internal error; see the webhook's logs"
# worded here for both lanes (aiohttp's handler and the fast lane), which refuse these alike
BODY_CUT_REASON = "connection closed before the body was complete"


def body_timeout_reason(limits: ServerLimits) -> str:
    return f"body not received within {limits.body_seconds:g}s"


class AdmissionEndpoint:
    """/mutate or /validate once a body has arrived: decode, evaluate, count, log, encode. aiohttp's handler
    and the fast lane (`webhook/server/fastlane.py`) both answer through it, so what the two decide and say
    cannot differ."""

    def __init__(self, services: Services, endpoint: str, limits: ServerLimits) -> None:
        self.services = services
        self.endpoint = endpoint
        self.limits = limits
        self._repeats = RepeatWindow()
        self._span = f"admission.{endpoint}"

    async def refuse(self, status: int, reason: str) -> bytes:
        """The body of a refusal, counted, logged and answered after the tarpit's pause (a flood of bad
        input down one connection is slowed to a trickle; the API server never sends one)."""
        self.services.metrics.malformed(self.endpoint, status)
        log.warning("refused request: %s", reason, extra={"endpoint": self.endpoint})
        await asyncio.sleep(self.limits.refusal_delay_seconds)
        return json_bytes({"error": reason})

    async def answer(self, body: bytes, timeout: str | None, started: float) -> tuple[int, bytes]:
        """HTTP status and JSON body for a review's bytes; `timeout` is the URL's ?timeout= (the API
        server's own deadline for this call), `started` when the request began (perf_counter)."""
        try:
            if len(body) > self.limits.thread_decode_bytes:
                # parsing and shape checks of a big body run beside the loop, which keeps answering meanwhile
                request = await asyncio.to_thread(parse_review, body)
            else:
                request = parse_review(body)
        except MalformedReview as exc:
            return 400, await self.refuse(400, str(exc))
        budget = evaluation_budget(timeout, DEFAULT_BUDGET)
        services = self.services
        if services.tracing.enabled:
            with services.tracing.span(self._span, uid=request.uid, kind=request.kind.kind,
                                       operation=request.operation, namespace=request.namespace):
                verdict = await self._evaluate(request, budget)
        else:  # no exporter (the default): the span would be a nullcontext, its attributes built for nothing
            verdict = await self._evaluate(request, budget)
        seconds = time.perf_counter() - started
        outcome = "allowed" if verdict.allowed else "denied"
        services.metrics.admission(self.endpoint, request.operation, request.kind.kind, outcome, seconds)
        services.metrics.rule_results(request, verdict.results)
        log_admission(log, self.endpoint, request, verdict, seconds, self._repeats)
        return 200, json_bytes(encode_response(request.uid, verdict))

    async def _evaluate(self, request: AdmissionRequest, budget: float) -> Verdict:
        if self.endpoint == "mutate":
            return (await self.services.engine.mutate(request, budget)).verdict
        if self.endpoint == POLICY_ENDPOINT:  # compiling a policy is work for a thread, not the event loop
            return await asyncio.to_thread(self.services.policy_check.judge, request)
        return await self.services.engine.validate(request, budget)


def _json(status: int, body: bytes) -> web.Response:
    return web.Response(body=body, status=status, content_type="application/json")


def _closing(response: web.Response) -> web.Response:
    """The response, with the connection closed after it."""
    response.force_close()
    return response


def admission_handler(admission: AdmissionEndpoint) -> Callable[[web.Request], Awaitable[web.Response]]:
    """aiohttp's route handler: reads the body (bounded in time and size), then answers through `admission`."""
    refuse = admission.refuse

    async def handle(http: web.Request) -> web.Response:
        started = time.perf_counter()
        if http.app[CLIENT_CERT_REQUIRED] and not (http.transport and http.transport.get_extra_info("peercert")):
            # the TLS layer verified any certificate presented; none presented is not the API server
            return _json(401, await refuse(401, CLIENT_CERT_REASON))
        try:
            if http.content.is_eof():  # the whole body came with the headers (most reviews): nothing to wait for
                body = await http.read()
            else:
                async with asyncio.timeout(admission.limits.body_seconds):
                    body = await http.read()
        except web.HTTPRequestEntityTooLarge:
            return _json(413, await refuse(413, f"body larger than {MAX_BODY} bytes (3 MiB)"))
        # the body was not read whole, so what follows on the connection is not a next request: close it
        except asyncio.TimeoutError:  # the rest of a stalled body is not worth waiting for
            return _closing(_json(408, await refuse(408, body_timeout_reason(admission.limits))))
        except web.RequestPayloadError as exc:  # a Content-Encoding that does not decode, a broken chunk
            return _closing(_json(400, await refuse(400, f"body could not be read: {_http_reason(exc)}")))
        except ConnectionError:  # the client left mid-body: nobody to answer, and not the webhook's error
            return _closing(_json(400, await refuse(400, BODY_CUT_REASON)))
        return _json(*await admission.answer(body, http.query.get("timeout"), started))

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
            # served, but each answers every request it matches with its failure policy (Fail: a denial)
            "brokenPolicies": [policy.describe() for policy in status.broken[:MAX_LISTED]],
            "brokenPolicyCount": len(status.broken),
            # how many policies take each evaluation route (`quartermaster validate --explain` says which and why)
            "policyRoutes": dict(Counter(p.traits.route for p in services.store.snapshot.policies)),
        }
        details = services.state.sync_details()  # live mode: per-kind informer state
        if details:
            body["stateDetails"] = details
        ready = status.loaded and services.state.synced
        body["status"] = ("degraded" if errors or status.broken else "ready") if ready else "unready"
        return web.json_response(body, status=200 if ready else 503)

    async def metrics(_: web.Request) -> web.Response:
        response = web.Response(body=services.metrics.exposition())
        response.headers["Content-Type"] = CONTENT_TYPE
        return response

    return {"healthz": healthz, "readyz": readyz, "metrics": metrics}
