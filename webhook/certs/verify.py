"""Does a TLS client that trusts these CAs accept this serving chain?

cryptography's RFC 5280 path builder makes the checks a TLS client makes: names, validity, key usage,
basic constraints and path length (which is why rollover CAs are made with path length 1).
"""

from __future__ import annotations

import datetime as dt
import ipaddress

from cryptography import x509
from cryptography.x509.verification import DNSName, IPAddress, PolicyBuilder, Store, VerificationError


def serving_names(cert: x509.Certificate) -> tuple[list[str], list[str]]:
    """DNS names and IP addresses of a serving certificate's SAN extension."""
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return [], []
    return list(sans.get_values_for_type(x509.DNSName)), [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)]


def is_ca(cert: x509.Certificate) -> bool:
    try:
        return bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        return False


def _subject_for(leaf: x509.Certificate) -> DNSName | IPAddress | None:
    dns, ips = serving_names(leaf)
    if dns:
        return DNSName(dns[0])
    if ips:
        return IPAddress(ipaddress.ip_address(ips[0]))
    return None


def verify_serving(chain: tuple[x509.Certificate, ...], trusted: tuple[x509.Certificate, ...],
                   now: dt.datetime, name: str | None = None) -> str | None:
    """None when a TLS client trusting `trusted` accepts `chain` for `name` (default: its first SAN); else why not."""
    if not trusted:
        return "no trusted CA"
    subject = _subject_for(chain[0]) if name is None else (
        IPAddress(ipaddress.ip_address(name)) if _is_ip(name) else DNSName(name))
    if subject is None:
        return "the serving certificate has no subject alternative name"
    verifier = PolicyBuilder().store(Store(list(trusted))).time(now).build_server_verifier(subject)
    try:
        verifier.verify(chain[0], list(chain[1:]))
    except VerificationError as exc:
        return str(exc)
    return None


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
