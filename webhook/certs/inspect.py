"""What the certificate material says: subjects, SANs, expiry, and whether the chain verifies.

The serving chain is verified once against the whole bundle and once against each CA alone, so a
rollover can be seen to serve clients of either CA.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes

from webhook.certs.material import CertMaterial
from webhook.certs.rotate import RotationPolicy
from webhook.certs.verify import is_ca, serving_names, verify_serving
from webhook.model.quickinit import frozen_dataclass


@frozen_dataclass
class CertInfo:
    role: str  # "CA" (bundle), "serving", "intermediate"
    subject: str
    issuer: str
    serial: str
    not_before: str
    not_after: str
    days_left: int
    is_ca: bool
    dns_names: tuple[str, ...]
    ip_addresses: tuple[str, ...]
    sha256: str
    signing: bool = False  # for CAs: ca.key belongs to it


@frozen_dataclass
class Inspection:
    certificates: tuple[CertInfo, ...]
    verifies_with_bundle: bool
    verifies_with: tuple[str, ...]  # subjects of the bundle CAs that each alone verify the serving chain
    problems: tuple[str, ...]
    renewal_due: bool

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def cert_info(cert: x509.Certificate, role: str, now: dt.datetime, signing: bool = False) -> CertInfo:
    dns, ips = serving_names(cert)
    return CertInfo(
        role=role, subject=cert.subject.rfc4514_string(), issuer=cert.issuer.rfc4514_string(),
        serial=format(cert.serial_number, "x"), not_before=cert.not_valid_before_utc.isoformat(),
        not_after=cert.not_valid_after_utc.isoformat(), days_left=(cert.not_valid_after_utc - now).days,
        is_ca=is_ca(cert), dns_names=tuple(dns), ip_addresses=tuple(ips),
        sha256=cert.fingerprint(hashes.SHA256()).hex(), signing=signing,
    )


def inspect_material(material: CertMaterial, now: dt.datetime, policy: RotationPolicy = RotationPolicy()) -> Inspection:
    signing = material.signing_ca
    infos = [cert_info(c, "CA", now, signing=c is signing) for c in material.bundle]
    infos.append(cert_info(material.leaf, "serving", now))
    infos += [cert_info(c, "intermediate", now) for c in material.intermediates]
    problems = []
    failure = verify_serving(material.chain, material.bundle, now)
    if failure:
        problems.append(f"the serving chain does not verify with ca.crt: {failure}")
    alone = tuple(c.subject.rfc4514_string() for c in material.bundle if verify_serving(material.chain, (c,), now) is None)
    for cert in (*material.bundle, *material.chain):
        if cert.not_valid_after_utc <= now:
            problems.append(f"{cert.subject.rfc4514_string()} expired on {cert.not_valid_after_utc:%Y-%m-%d}")
    if material.ca_key is None:
        problems.append("no ca.key: renewal is up to the issuer (cert-manager)")
    left = material.leaf.not_valid_after_utc - now
    return Inspection(tuple(infos), failure is None, alone, tuple(problems),
                      renewal_due=left < dt.timedelta(days=policy.renew_before_days))


def format_inspection(inspection: Inspection) -> str:
    lines = []
    for info in inspection.certificates:
        label = f"{info.role}{' (signing)' if info.signing else ''}"
        lines.append(f"{label}: {info.subject}")
        lines.append(f"  issuer:     {info.issuer}")
        lines.append(f"  valid:      {info.not_before} .. {info.not_after} ({info.days_left} days left)")
        if info.dns_names or info.ip_addresses:
            lines.append(f"  SANs:       {', '.join((*info.dns_names, *info.ip_addresses))}")
        lines.append(f"  serial:     {info.serial}")
        lines.append(f"  sha256:     {info.sha256}")
    lines.append(f"serving chain verifies with ca.crt: {'yes' if inspection.verifies_with_bundle else 'NO'}")
    if len(inspection.certificates) and inspection.verifies_with:
        lines.append(f"verifies with each of: {'; '.join(inspection.verifies_with)}")
    lines.append(f"renewal due: {'yes' if inspection.renewal_due else 'no'}")
    lines += [f"problem: {p}" for p in inspection.problems]
    return "\n".join(lines)
