"""The aiohttp application: routes, and the middleware every request passes."""

from __future__ import annotations

import logging
from typing import Awaitable, Callable

from aiohttp import web

from webhook.server.guard import ADMISSION, CLIENT_CERT_REQUIRED, GUARD, LIMITS, ConnectionGuard
from webhook.server.handlers import (ADMISSION_ENDPOINTS, INTERNAL_ERROR, MAX_BODY, AdmissionEndpoint, Services,
                                     admission_handler, health_handlers)
from webhook.server.limits import ServerLimits

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def guarded(handler: Handler, guard: ConnectionGuard) -> Handler:
    """A route's handler as every request must pass it. The connection guard is told a request is in
    progress (its deadline is then the request's, not the headers'), and a bug costs one request (a 500
    the failure policy handles), never the server. A wrapper per route rather than aiohttp middlewares:
    their chain cost more per review than this whole wrapper, and an unknown path has nothing to guard."""

    async def handle(request: web.Request) -> web.StreamResponse:
        transport = request.transport
        guard.request_started(transport)
        try:
            return await handler(request)
        except web.HTTPException:
            raise
        except Exception:
            log.exception("unhandled error on %s", request.path)
            return web.json_response({"error": INTERNAL_ERROR}, status=500)
        finally:
            guard.request_finished(transport)

    return handle


def build_app(services: Services, limits: ServerLimits | None = None, client_cert_required: bool = False) -> web.Application:
    """`client_cert_required`: /mutate and /validate answer only clients whose certificate the TLS layer verified."""
    limits = limits or ServerLimits()
    app = web.Application(client_max_size=MAX_BODY)
    app[LIMITS] = limits
    app[CLIENT_CERT_REQUIRED] = client_cert_required
    guard = app[GUARD] = ConnectionGuard(limits, on_close=services.metrics.connection_closed)
    health = health_handlers(services)
    # the endpoints' work once a body is in; the listener's fast lane answers through the same objects
    endpoints = app[ADMISSION] = {name: AdmissionEndpoint(services, name, limits) for name in ADMISSION_ENDPOINTS}
    for name, endpoint in endpoints.items():
        app.router.add_post(f"/{name}", guarded(admission_handler(endpoint), guard))
    for name in ("healthz", "readyz", "metrics"):
        app.router.add_get(f"/{name}", guarded(health[name], guard))
    return app
