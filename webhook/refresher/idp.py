"""The identity provider, through authlib: OIDC discovery, refresh-token grant, RFC 8693 token exchange.

The refresh token lives in memory only: an IdP that rotates refresh tokens hands a new one with
every refresh and may revoke the whole grant when an old one is used again, so the rotated token
must replace the one read from the (read-only) credentials Secret.
"""

from __future__ import annotations

import ipaddress
import os
import time
from pathlib import Path
from urllib.parse import urlsplit

import requests
from authlib.common.errors import AuthlibBaseError
from authlib.integrations.requests_client import OAuth2Session

from webhook.model.quickinit import frozen_dataclass

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
# a refused grant will not succeed by retrying: the user must log in again (a new Secret)
PERMANENT_ERRORS = frozenset({"invalid_grant", "invalid_client", "unauthorized_client", "unsupported_grant_type"})


class IdpError(Exception):
    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


@frozen_dataclass
class Credentials:
    client_id: str
    client_secret: str | None
    refresh_token: str

    @classmethod
    def read(cls, directory: Path) -> "Credentials":
        def field(name: str, required: bool = True) -> str | None:
            path = directory / name
            if not path.is_file():
                if required:
                    raise IdpError(f"credentials directory {directory} has no {name} file", permanent=True)
                return None
            return path.read_text().strip() or None
        client_id, refresh_token = field("client_id"), field("refresh_token")
        if not client_id or not refresh_token:
            raise IdpError(f"credentials in {directory}: client_id and refresh_token must not be empty", permanent=True)
        return cls(client_id=client_id, client_secret=field("client_secret", required=False), refresh_token=refresh_token)


@frozen_dataclass
class Endpoints:
    token: str
    userinfo: str | None


@frozen_dataclass
class IssuedToken:
    access_token: str
    expires_at: float  # wall-clock seconds


def require_secure_issuer(issuer: str) -> None:
    """HTTPS, except on loopback (tests, a local IdP proxy), which authlib must then be told to allow."""
    parts = urlsplit(issuer)
    if parts.scheme == "https":
        return
    host = parts.hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if parts.scheme != "http" or not loopback:
        raise IdpError(f"issuer {issuer!r} must be an https URL (plain http only on loopback)", permanent=True)
    os.environ.setdefault("AUTHLIB_INSECURE_TRANSPORT", "1")


class IdentityProvider:
    def __init__(self, issuer: str, credentials: Credentials, *, scope: str | None = None, timeout: float = 10.0) -> None:
        require_secure_issuer(issuer)
        self.issuer = issuer.rstrip("/")
        self._timeout = timeout
        self._refresh_token = credentials.refresh_token
        self._session = OAuth2Session(
            client_id=credentials.client_id, client_secret=credentials.client_secret, scope=scope,
            token_endpoint_auth_method="client_secret_basic" if credentials.client_secret else "none")
        self.endpoints: Endpoints | None = None

    def discover(self) -> Endpoints:
        url = f"{self.issuer}/.well-known/openid-configuration"
        try:
            response = self._session.get(url, timeout=self._timeout, withhold_token=True)
            response.raise_for_status()
            document = response.json()
        except (requests.RequestException, ValueError) as exc:
            raise IdpError(f"OIDC discovery at {url} failed: {exc}") from exc
        if document.get("issuer", "").rstrip("/") != self.issuer:
            raise IdpError(f"discovery at {url} names issuer {document.get('issuer')!r}, not {self.issuer!r}", permanent=True)
        if not document.get("token_endpoint"):
            raise IdpError(f"discovery at {url} has no token_endpoint", permanent=True)
        self.endpoints = Endpoints(token=document["token_endpoint"], userinfo=document.get("userinfo_endpoint"))
        return self.endpoints

    def refresh(self) -> IssuedToken:
        """The refresh-token grant; keeps a rotated refresh token for the next call."""
        token = self._call("refresh", lambda url: self._session.refresh_token(
            url, refresh_token=self._refresh_token, timeout=self._timeout))
        if token.get("refresh_token"):
            self._refresh_token = token["refresh_token"]
        return _issued(token, "refresh")

    def exchange(self, subject: IssuedToken, audience: str) -> IssuedToken:
        """RFC 8693: trade the access token for one meant for `audience` (e.g. the storage service)."""
        token = self._call("token exchange", lambda url: self._session.fetch_token(
            url, grant_type=TOKEN_EXCHANGE, subject_token=subject.access_token,
            subject_token_type=ACCESS_TOKEN_TYPE, requested_token_type=ACCESS_TOKEN_TYPE,
            audience=audience, timeout=self._timeout))
        return _issued(token, "token exchange")

    @property
    def refresh_token(self) -> str:
        return self._refresh_token

    def _call(self, what: str, request) -> dict:
        endpoints = self.endpoints or self.discover()
        try:
            return dict(request(endpoints.token))
        except AuthlibBaseError as exc:
            error = exc.error or ""
            raise IdpError(f"{what} refused by {self.issuer}: {exc}", permanent=error in PERMANENT_ERRORS) from exc
        except (requests.RequestException, ValueError) as exc:
            raise IdpError(f"{what} at {endpoints.token} failed: {exc}") from exc


def _issued(token: dict, what: str) -> IssuedToken:
    access_token = token.get("access_token")
    if not access_token:
        raise IdpError(f"{what} answer has no access_token")
    expires_at = token.get("expires_at")
    if expires_at is None:
        expires_in = token.get("expires_in")
        if expires_in is None:
            raise IdpError(f"{what} answer says neither expires_in nor expires_at: cannot schedule the next refresh")
        expires_at = time.time() + float(expires_in)
    return IssuedToken(access_token=access_token, expires_at=float(expires_at))
