"""Command-line arguments of `quartermaster token-refresher` (argparse only, no heavy imports)."""

from __future__ import annotations

import argparse
from pathlib import Path

from webhook.commandline import add_command


def _duration(text: str) -> float:
    """`300`, `300s`, `5m` or `1h` as seconds."""
    units = {"s": 1, "m": 60, "h": 3600}
    number, unit = (text[:-1], units[text[-1]]) if text and text[-1] in units else (text, 1)
    try:
        value = float(number) * unit
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (e.g. 300s, 5m)") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a duration cannot be negative")
    return value


def add_token_refresher_command(commands: argparse._SubParsersAction, summary: str) -> None:
    refresher = add_command(
        commands, "token-refresher", summary,
        "Refresh an OIDC access token ahead of its expiry with the refresh-token grant (and, with --audience,\n"
        "RFC 8693 token exchange) and write it for EOS as 'oauth2:<token>:<oauth-url>', mode 0600, owned by the\n"
        "running uid, replaced atomically. The credentials directory holds client_id, client_secret (absent for\n"
        "a public client) and refresh_token, as a mounted Secret.",
        ["quartermaster token-refresher --credentials-dir /run/secrets/oidc --token-file /run/eos/token \\",
         "    --issuer https://auth.example.org/realms/platform",
         "quartermaster token-refresher --credentials-dir creds --token-file token --issuer https://idp --audience eos"],
        _run)
    refresher.add_argument("--credentials-dir", type=Path, required=True, help="directory with client_id, client_secret, refresh_token")
    refresher.add_argument("--token-file", type=Path, required=True, help="file to write the token into")
    refresher.add_argument("--issuer", required=True, help="OIDC issuer URL (discovery at <issuer>/.well-known/openid-configuration)")
    refresher.add_argument("--audience", default=None, help="exchange each access token for one with this audience (RFC 8693)")
    refresher.add_argument("--scope", default=None, help="scope to ask for on refresh (default: the grant's)")
    refresher.add_argument("--oauth-url", default=None,
                           help="the resource EOS validates the token at (default: the issuer's userinfo endpoint without scheme)")
    refresher.add_argument("--refresh-margin", type=_duration, default=300.0,
                           help="refresh this long before expiry, at most half the token's lifetime (default: 300s)")
    refresher.add_argument("--jitter", type=float, default=0.2,
                           help="refresh up to this fraction of the margin earlier still, at random (default: 0.2)")
    refresher.add_argument("--max-backoff", type=_duration, default=60.0,
                           help="longest wait between retries after an IdP error (default: 60s)")
    refresher.add_argument("--ready-file", type=Path, default=None,
                           help="exists while a valid token is in --token-file (default: <token-file dir>/.ready)")
    refresher.add_argument("--metrics-address", default="0.0.0.0:9464",
                           help="host:port for /metrics, /healthz and /readyz; empty disables (default: 0.0.0.0:9464)")
    refresher.add_argument("--timeout", type=_duration, default=10.0, help="timeout of one IdP request (default: 10s)")
    refresher.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"],
                           help="log verbosity (default: info)")


def _run(args: argparse.Namespace) -> int:
    from webhook.refresher.main import run_token_refresher  # the OAuth client only for the sidecar

    return run_token_refresher(args)
