"""Run `quartermaster token-refresher` until SIGTERM (the kubelet stopping the pod)."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

from webhook.observability.logs import configure_logging
from webhook.refresher.idp import Credentials, IdentityProvider, IdpError
from webhook.refresher.loop import Output, Refresher
from webhook.refresher.metrics import RefresherMetrics
from webhook.refresher.schedule import Schedule
from webhook.refresher.status import start_status_server

EXIT_OK, EXIT_BAD_INPUT = 0, 2
log = logging.getLogger("quartermaster.token_refresher")


def run_token_refresher(args: argparse.Namespace) -> int:
    try:
        idp = IdentityProvider(args.issuer, Credentials.read(args.credentials_dir), scope=args.scope, timeout=args.timeout)
    except (IdpError, OSError) as exc:
        print(f"quartermaster token-refresher: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not args.token_file.parent.is_dir():
        print(f"quartermaster token-refresher: directory {args.token_file.parent} of --token-file does not exist", file=sys.stderr)
        return EXIT_BAD_INPUT
    output = Output(token_file=args.token_file, ready_file=args.ready_file or args.token_file.parent / ".ready",
                    oauth_url=args.oauth_url, audience=args.audience)
    schedule = Schedule(margin=args.refresh_margin, jitter=args.jitter, max_backoff=max(args.max_backoff, 1.0))
    configure_logging(args.log_level)  # once the input is known good: bad input is one plain line
    metrics = RefresherMetrics()
    refresher = Refresher(idp, output, schedule, metrics)
    server = None
    if args.metrics_address:
        try:
            server = start_status_server(args.metrics_address, metrics, lambda: refresher.ready)
        except (OSError, ValueError) as exc:
            print(f"quartermaster token-refresher: cannot serve status on {args.metrics_address}: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    log.info("refreshing tokens of %s into %s", args.issuer, args.token_file)
    refresher.run(stop)
    if server is not None:
        server.shutdown()
    return EXIT_OK
