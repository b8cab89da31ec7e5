#!/usr/bin/env python3
"""The yardstick: an aiohttp AdmissionReview responder over TLS that decides nothing.

    python load-tests/noop.py --port 9443 --cert tls.crt --key tls.key

It decodes the review, echoes the uid and allows, as cheaply as aiohttp allows: every ratio in the
suite is "quartermaster's req/s / this responder's req/s", measured in the same run on the same machine.
It runs on asyncio's own event loop, as issue #12 defines the yardstick; `--event-loop uvloop` runs the
same responder on the loop `quartermaster serve` uses by default, the suite's second yardstick.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl

from aiohttp import web


async def respond(request: web.Request) -> web.Response:
    review = json.loads(await request.read())
    uid = review["request"]["uid"]
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {"uid": uid, "allowed": True}}
    return web.Response(body=json.dumps(body, separators=(",", ":")).encode(), content_type="application/json")


async def ready(_: web.Request) -> web.Response:
    return web.Response(text="ok\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--event-loop", choices=["asyncio", "uvloop"], default="asyncio")
    args = parser.parse_args()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(args.cert, args.key)
    app = web.Application(client_max_size=3 * 1024 * 1024)
    app.router.add_post("/mutate", respond)
    app.router.add_post("/validate", respond)
    app.router.add_get("/readyz", ready)
    loop = None
    if args.event_loop == "uvloop":
        import uvloop

        loop = uvloop.new_event_loop()
    web.run_app(app, host="127.0.0.1", port=args.port, ssl_context=context, access_log=None, print=None,
                loop=loop or asyncio.new_event_loop())


if __name__ == "__main__":
    main()
