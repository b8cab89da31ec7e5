"""The aiohttp application: routes, and the middleware every request passes."""

from __future__ import annotations

import logging
from typing import Awaitable, Callable

from aiohttp import web

from webhook.server.guard import CLIENT_CERT_REQUIRED, GUARD, LIMITS, ConnectionGuard
from webhook.server.handlers import MAX_BODY, Services, admission_handler, health_handlers
from webhook.server.limits import ServerLimits

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def unexpected_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A bug must cost one request (a 500 the failure policy handles), never the server."""
    try:
        return await handler(request)
    except web.HTTPException:
        raise
    except Exception:
        log.exception("unhandled error on %s", request.path)
        return web.json_response({"error": "internal error; see the webhook's logs"}, status=500)


@web.middleware
async def track_requests(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Tell the connection guard a request is in progress: its deadline is then the request's, not the headers'."""
    guard = request.app[GUARD]
    guard.request_started(request.transport)
    try:
        return await handler(request)
    finally:
        guard.request_finished(request.transport)


def build_app(services: Services, limits: ServerLimits | None = None, client_cert_required: bool = False) -> web.Application:
    """`client_cert_required`: /mutate and /validate answer only clients whose certificate the TLS layer verified."""
    limits = limits or ServerLimits()
    app = web.Application(client_max_size=MAX_BODY, middlewares=[track_requests, unexpected_errors])
    app[LIMITS] = limits
    app[CLIENT_CERT_REQUIRED] = client_cert_required
    app[GUARD] = ConnectionGuard(limits, on_close=services.metrics.connection_closed)
    health = health_handlers(services)
    app.router.add_post("/mutate", admission_handler(services, "mutate"))
    app.router.add_post("/validate", admission_handler(services, "validate"))
    app.router.add_get("/healthz", health["healthz"])
    app.router.add_get("/readyz", health["readyz"])
    app.router.add_get("/metrics", health["metrics"])
    return app
