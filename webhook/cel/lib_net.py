"""Kubernetes ip and cidr libraries; values are tagged maps holding the canonical text."""

from __future__ import annotations

import ipaddress
from typing import Any

from webhook.cel.functions import Library, fn, method
from webhook.cel.values import expect, opaque, opaque_type

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _parse_ip(text: str) -> Address:
    if "%" in text:
        raise ValueError(f"IP address with zone value is not allowed: {text}")
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise ValueError(f"IP Address {text!r} parse error during conversion from string") from None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        raise ValueError(f"IPv4-mapped IPv6 address is not allowed: {text}")
    return address


def ip(text: str) -> dict[str, Any]:
    return opaque("ip", text=str(_parse_ip(text)))


def _addr(value: Any) -> Address:
    return ipaddress.ip_address(expect(value, "ip")["text"])


def _valid(parse: Any, text: str) -> bool:
    try:
        parse(text)
    except ValueError:
        return False
    return True


def _is_global_unicast(value: Any) -> bool:
    address = _addr(value)
    if address.is_unspecified or address.is_loopback or address.is_multicast or address.is_link_local:
        return False
    return not (isinstance(address, ipaddress.IPv4Address) and address == ipaddress.IPv4Address("255.255.255.255"))


def _is_link_local_multicast(value: Any) -> bool:
    address = _addr(value)
    if isinstance(address, ipaddress.IPv4Address):
        return address in ipaddress.ip_network("224.0.0.0/24")
    return address.is_multicast and (address.packed[1] & 0x0F) == 0x02


def _parse_cidr(text: str) -> ipaddress.IPv4Interface | ipaddress.IPv6Interface:
    address, slash, prefix = text.partition("/")
    # Go's netip.ParsePrefix (1.22+): ASCII digits, no leading zero ("/024" is refused, "/0" is not)
    if not slash or not (prefix.isascii() and prefix.isdigit()) or (len(prefix) > 1 and prefix[0] == "0"):
        raise ValueError(f"network address parse error during conversion from string: {text!r}")
    _parse_ip(address)
    try:
        return ipaddress.ip_interface(text)
    except ValueError:
        raise ValueError(f"network address parse error during conversion from string: {text!r}") from None


def cidr(text: str) -> dict[str, Any]:
    iface = _parse_cidr(text)
    return opaque("cidr", text=f"{iface.ip}/{iface.network.prefixlen}")


def _iface(value: Any) -> ipaddress.IPv4Interface | ipaddress.IPv6Interface:
    return ipaddress.ip_interface(expect(value, "cidr")["text"])


def _contains_ip(value: Any, other: Any) -> bool:
    address = _parse_ip(other) if isinstance(other, str) else _addr(other)
    network = _iface(value).network
    return address.version == network.version and address in network


def _contains_cidr(value: Any, other: Any) -> bool:
    inner = (_parse_cidr(other) if isinstance(other, str) else _iface(other)).network
    outer = _iface(value).network
    return inner.version == outer.version and inner.subnet_of(outer)  # type: ignore[arg-type]


def _family(value: Any) -> int:
    kind = opaque_type(value)
    return (_addr(value) if kind == "ip" else _iface(value)).version


IP = Library("ip", (
    fn("ip", ["string"], "map", ip),
    fn("isIP", ["string"], "bool", lambda text: _valid(_parse_ip, text)),
    fn("ip.isCanonical", ["string"], "bool", lambda text: str(_parse_ip(text)) == text),
    method("family", ["map"], "int", _family),
    method("isUnspecified", ["map"], "bool", lambda v: _addr(v).is_unspecified),
    method("isLoopback", ["map"], "bool", lambda v: _addr(v).is_loopback),
    method("isLinkLocalMulticast", ["map"], "bool", _is_link_local_multicast),
    method("isLinkLocalUnicast", ["map"], "bool", lambda v: _addr(v).is_link_local),
    method("isGlobalUnicast", ["map"], "bool", _is_global_unicast),
))

CIDR = Library("cidr", (
    fn("cidr", ["string"], "map", cidr),
    fn("isCIDR", ["string"], "bool", lambda text: _valid(_parse_cidr, text)),
    method("containsIP", ["map", "string"], "bool", _contains_ip),
    method("containsIP", ["map", "map"], "bool", _contains_ip),
    method("containsCIDR", ["map", "string"], "bool", _contains_cidr),
    method("containsCIDR", ["map", "map"], "bool", _contains_cidr),
    method("ip", ["map"], "map", lambda v: opaque("ip", text=str(_iface(v).ip))),
    method("masked", ["map"], "map", lambda v: opaque("cidr", text=str(_iface(v).network))),
    method("prefixLength", ["map"], "int", lambda v: _iface(v).network.prefixlen),
))
