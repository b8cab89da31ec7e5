"""Kubernetes' url library, read by the rules of Go's net/url, which Kubernetes uses.

`url(s)` accepts what `url.ParseRequestURI` accepts (an absolute URI, an opaque `scheme:rest`, or an
absolute path; spaces in a path or query are fine, control characters and bad escapes are not), and its
getters answer from `url.Parse` (the fragment split off), as Kubernetes' urls.go does. Python's urllib is
more lenient and decodes differently (`/a%2Fb` came back as `/a/b`), hence this small reader.
"""

from __future__ import annotations

import re
from typing import Any

from webhook.cel.functions import Library, fn, method
from webhook.cel.lib_format import go_quote
from webhook.cel.values import expect, opaque
from webhook.model.quickinit import frozen_dataclass

_ERROR = "URL parse error during conversion from string"
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")
_PATH_KEPT = _UNRESERVED | frozenset("$&+,/:;=@")              # Go's shouldEscape(c, encodePath) is false
_PATH_VALID = _PATH_KEPT | frozenset("!$&'()*+,;=:@[]%")       # Go's validEncoded(s, encodePath)
_HOST_VALID = _UNRESERVED | frozenset("!$&'()*+,;=:[]<>\"%")
_USERINFO_VALID = _UNRESERVED | frozenset("-._:~!$&'()*+,;=%@")
_HEX = frozenset("0123456789abcdefABCDEF")


@frozen_dataclass
class _Parts:
    scheme: str
    host: str
    raw_path: str
    raw_query: str
    opaque: bool


class UrlRefused(ValueError):
    """What url.ParseRequestURI says of a text it refuses: `why` is its own words."""

    def __init__(self, text: str, why: str) -> None:
        super().__init__(f"{_ERROR}: parse {text!r}: {why}")
        self.why = why


def _fail(text: str, why: str) -> ValueError:
    return UrlRefused(text, why)


def _unescape(text: str, whole: str, plus_is_space: bool = False) -> str:
    out = bytearray()
    i = 0
    raw = text.encode()
    while i < len(raw):
        c = raw[i]
        if c == 0x25:  # '%'
            pair = raw[i + 1:i + 3].decode("latin-1")
            if len(pair) < 2 or not set(pair) <= _HEX:
                raise _fail(whole, f"invalid URL escape {go_quote(raw[i:i + 3].decode('utf-8', 'replace'))}")
            out.append(int(pair, 16))
            i += 3
            continue
        out.append(0x20 if plus_is_space and c == 0x2B else c)
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _port_digits(port: str) -> bool:
    return port == "" or port.isascii() and port.isdigit()


def _check_host(host: str, whole: str) -> None:
    if host.startswith("["):
        end = host.find("]")
        if end < 0:
            raise _fail(whole, "missing ']' in host")
        tail = host[end + 1:]
        if tail and not (tail[0] == ":" and _port_digits(tail[1:])):
            raise _fail(whole, f"invalid port {go_quote(tail)} after host")
    else:
        colon = host.rfind(":")
        if colon >= 0 and not _port_digits(host[colon + 1:]):
            raise _fail(whole, f"invalid port {go_quote(host[colon:])} after host")
    for ch in host:
        if ch.isascii() and ch not in _HOST_VALID:
            raise _fail(whole, f"invalid character {go_quote(ch)} in host name")
    _unescape(host, whole)


def _parse(text: str, via_request: bool) -> _Parts:
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise _fail(text, "invalid control character in URL")
    if via_request and not text:
        raise _fail(text, "empty url")
    scheme, rest = "", text
    match = _SCHEME.match(text)
    if match and text[match.end():match.end() + 1] == ":":
        scheme, rest = match.group(0).lower(), text[match.end() + 1:]
    elif text.startswith(":"):
        raise _fail(text, "missing protocol scheme")
    if rest.endswith("?") and rest.count("?") == 1:
        rest, query = rest[:-1], ""
    else:
        rest, _, query = rest.partition("?")
    if not rest.startswith("/"):
        if scheme:
            return _Parts(scheme, "", "", query, opaque=True)
        if via_request:
            raise _fail(text, "invalid URI for request")
    host = ""
    if (scheme or not via_request and not rest.startswith("///")) and rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        rest = slash + path
        userinfo, at, host = authority.rpartition("@")
        if at and not set(userinfo) <= _USERINFO_VALID:
            raise _fail(text, "invalid userinfo")
        _check_host(host, text)
    _unescape(rest, text)
    return _Parts(scheme, _unescape(host, text), rest, query, opaque=False)  # Go keeps the host unescaped


def _parse_url(text: str) -> _Parts:
    _parse(text, via_request=True)                    # url.ParseRequestURI decides what is a URL
    before, _, fragment = text.partition("#")
    _unescape(fragment, text)
    return _parse(before, via_request=False)          # url.Parse gives the parts


def url(text: str) -> dict[str, Any]:
    _parse_url(text)
    return opaque("url", text=text)


def request_uri_problem(text: str) -> str | None:
    """The reason url.ParseRequestURI refuses `text` (its error's own words), None when it accepts it."""
    try:
        _parse(text, via_request=True)
    except UrlRefused as exc:
        return exc.why
    return None


def _is_url(text: str) -> bool:
    try:
        _parse(text, via_request=True)
    except ValueError:
        return False
    return True


def _parts(value: Any) -> _Parts:
    return _parse_url(expect(value, "url")["text"])


def _split_host_port(host: str) -> tuple[str, str]:
    name, port = host, ""
    colon = host.rfind(":")
    if colon >= 0 and _port_digits(host[colon + 1:]):
        name, port = host[:colon], host[colon + 1:]
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    return name, port


def _escaped_path(value: Any) -> str:
    """Go's EscapedPath: the path as written when it is a valid encoding, else the decoded path escaped."""
    raw = _parts(value).raw_path
    if raw == "*" or all(c in _PATH_VALID for c in raw):
        return raw
    decoded = _unescape(raw, raw).encode("utf-8", "surrogateescape")
    return "".join(chr(b) if chr(b) in _PATH_KEPT else f"%{b:02X}" for b in decoded)


def _query(value: Any) -> dict[str, list[str]]:
    """Go's url.Query: pairs split on '&'; a pair with ';' or a bad escape is dropped; '+' is a space."""
    out: dict[str, list[str]] = {}
    for pair in _parts(value).raw_query.split("&"):
        if not pair or ";" in pair:
            continue
        key, _, val = pair.partition("=")
        try:
            key, val = _unescape(key, pair, True), _unescape(val, pair, True)
        except ValueError:
            continue
        out.setdefault(key, []).append(val)
    return out


URLS = Library("urls", (
    fn("url", ["string"], "map", url),
    fn("isURL", ["string"], "bool", _is_url),
    method("getScheme", ["map"], "string", lambda u: _parts(u).scheme),
    method("getHost", ["map"], "string", lambda u: _parts(u).host),
    method("getHostname", ["map"], "string", lambda u: _split_host_port(_parts(u).host)[0]),
    method("getPort", ["map"], "string", lambda u: _split_host_port(_parts(u).host)[1]),
    method("getEscapedPath", ["map"], "string", _escaped_path),
    method("getQuery", ["map"], "map", _query),
))
