"""The aiohttp application and its HTTPS listener."""

from __future__ import annotations

import logging
from typing import Awaitable, Callable

from aiohttp import web

from webhook.server.handlers import MAX_BODY, Services, admission_handler, health_handlers

log = logging.getLogger(__name__)


@web.middleware
async def unexpected_errors(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    """A bug must cost one request (a 500 the failure policy handles), never the server."""
    try:
        return await handler(request)
    except web.HTTPException:
        raise
    except Exception:
        log.exception("unhandled error on %s", request.path)
        return web.json_response({"error": "internal error; see the webhook's logs"}, status=500)


def build_app(services: Services) -> web.Application:
    app = web.Application(client_max_size=MAX_BODY, middlewares=[unexpected_errors])
    health = health_handlers(services)
    app.router.add_post("/mutate", admission_handler(services, "mutate"))
    app.router.add_post("/validate", admission_handler(services, "validate"))
    app.router.add_get("/healthz", health["healthz"])
    app.router.add_get("/readyz", health["readyz"])
    app.router.add_get("/metrics", health["metrics"])
    return app
