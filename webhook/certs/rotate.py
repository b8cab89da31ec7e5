"""Certificate rotation: renew the serving certificate well before it expires, roll the CA over safely.

A rotation is a pure function of the current material and the clock (`plan_rotation`), so the same
logic rotates a cert dir and a Kubernetes Secret. It is meant to run periodically (a CronJob, or
`quartermaster certs rotate` by hand); each run does what is due and is a no-op otherwise.

CA rollover, with no moment where a client that trusts either the old or the new CA is refused:
1. introduce: a new CA is made and cross-signed by the old one; the bundle trusts both, and the new
   serving certificate is sent with the cross-signed CA as intermediate. A client that trusts only
   the old CA verifies leaf -> cross-signed CA -> old CA; one that trusts the new CA (or the bundle)
   verifies leaf -> new CA. The order in which the API server's caBundle and the pods' mounted
   files are updated therefore does not matter.
2. retire, once the overlap has passed: the old CA leaves the bundle and the intermediate leaves the
   chain. By then every client had the overlap to pick up the new bundle.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import NameOID

from webhook.certs.generate import CA_DAYS, SERVING_DAYS, make_ca, make_serving_cert
from webhook.certs.material import CertMaterial, PrivateKey, read_directory, write_directory
from webhook.certs.verify import serving_names, verify_serving
from webhook.model.quickinit import frozen_dataclass


def _hours(span: dt.timedelta) -> str:
    """A duration as people write it in these messages ("24 hours", "1.5 hours"), never timedelta's repr."""
    hours = span.total_seconds() / 3600
    return f"{hours:g} hour{'' if hours == 1 else 's'}"


BACKDATE = dt.timedelta(minutes=5)  # generate.py starts validity 5 minutes early, for clock skew


class RotationError(Exception):
    """The material cannot be rotated as asked (no CA key, a rollover already in progress)."""


@frozen_dataclass
class RotationPolicy:
    serving_days: int = SERVING_DAYS
    renew_before_days: int = 30       # a third of the serving lifetime: many daily runs get a chance
    ca_days: int = CA_DAYS
    ca_renew_before_days: int = 180
    overlap: dt.timedelta = dt.timedelta(hours=24)  # old and new CA both trusted at least this long

    def __post_init__(self) -> None:
        if not 0 < self.renew_before_days < self.serving_days:
            raise ValueError("renew_before_days must be positive and shorter than serving_days")
        if not 0 < self.ca_renew_before_days < self.ca_days:
            raise ValueError("ca_renew_before_days must be positive and shorter than ca_days")
        if self.overlap <= dt.timedelta(0):
            raise ValueError("overlap must be positive")


@frozen_dataclass
class RotationPlan:
    before: CertMaterial
    after: CertMaterial
    steps: tuple[str, ...]  # what was done and why, for the log and the command's output
    warnings: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.steps)

    @property
    def bundle_changed(self) -> bool:
        return [c.fingerprint(hashes.SHA256()) for c in self.before.bundle] != \
            [c.fingerprint(hashes.SHA256()) for c in self.after.bundle]


def now_utc() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def issued_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, x509.InvalidSignature):
        return False
    return True


def cross_sign(new_ca: x509.Certificate, old_ca: x509.Certificate, old_key: PrivateKey) -> x509.Certificate:
    """The new CA's name and key, vouched for by the old CA: the intermediate of the overlap."""
    not_after = min(new_ca.not_valid_after_utc, old_ca.not_valid_after_utc)
    builder = (
        x509.CertificateBuilder().subject_name(new_ca.subject).issuer_name(old_ca.subject)
        .public_key(new_ca.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(new_ca.not_valid_before_utc).not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                     key_encipherment=False, data_encipherment=False, key_agreement=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(new_ca.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(old_key.public_key()), critical=False)
    )
    return builder.sign(old_key, hashes.SHA256())


def _ca_name(now: dt.datetime) -> str:
    # distinct names per generation: chain building matches issuer names, and two CAs of one name confuse it
    return f"Quartermaster CA {now:%Y-%m-%dT%H%M%SZ}"


def _serving(material: CertMaterial, ca: x509.Certificate, ca_key: PrivateKey, policy: RotationPolicy,
             now: dt.datetime, dns_names: list[str] | None, intermediates: tuple[x509.Certificate, ...]) -> CertMaterial:
    old_dns, old_ips = serving_names(material.leaf)
    days_left_on_ca = (ca.not_valid_after_utc - now).days
    leaf, key = make_serving_cert(ca, ca_key, dns_names or old_dns or ["localhost"], old_ips,  # type: ignore[arg-type]
                                  days=max(1, min(policy.serving_days, days_left_on_ca)), now=now)
    return replace(material, chain=(leaf, *intermediates), key=key)


def _prune_expired(material: CertMaterial, now: dt.datetime, steps: list[str]) -> CertMaterial:
    signing = material.signing_ca
    keep = tuple(c for c in material.bundle if c is signing or c.not_valid_after_utc > now)
    if len(keep) == len(material.bundle):
        return material
    for gone in set(material.bundle) - set(keep):
        steps.append(f"dropped expired CA {_cn(gone)} from the bundle")
    pruned = replace(material, bundle=keep)
    # the cross-signed intermediate led to a CA that is gone: send the leaf alone
    return pruned if _rollover_in_progress(pruned) else replace(pruned, chain=(pruned.leaf,))


def _cn(cert: x509.Certificate) -> str:
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(names[0].value) if names else cert.subject.rfc4514_string()


def _introduced_at(ca: x509.Certificate) -> dt.datetime:
    return ca.not_valid_before_utc + BACKDATE


def _rollover_in_progress(material: CertMaterial) -> bool:
    return len(material.bundle) > 1


def _introduce_ca(material: CertMaterial, policy: RotationPolicy, now: dt.datetime, dns_names: list[str] | None,
                  why: str, steps: list[str]) -> CertMaterial:
    old_ca, old_key = material.signing_ca, material.ca_key
    assert old_ca is not None and old_key is not None
    new_ca, new_key = make_ca(_ca_name(now), days=policy.ca_days, now=now)
    if old_ca.not_valid_after_utc <= now:  # nobody can verify through an expired CA: start afresh
        rolled = replace(material, bundle=(new_ca,), ca_key=new_key)
        steps.append(f"new CA {_cn(new_ca)}: {_cn(old_ca)} has expired, so there is nothing to overlap with; "
                     f"clients need the new ca.crt")
        return _serving(rolled, new_ca, new_key, policy, now, dns_names, ())
    cross = cross_sign(new_ca, old_ca, old_key)
    rolled = replace(material, bundle=(*material.bundle, new_ca), ca_key=new_key)
    rolled = _serving(rolled, new_ca, new_key, policy, now, dns_names, (cross,))
    steps.append(f"CA rollover: new CA {_cn(new_ca)} ({why}); the bundle trusts {_cn(old_ca)} and {_cn(new_ca)} "
                 f"for at least {_hours(policy.overlap)}; the new serving certificate chains to {_cn(old_ca)} "
                 "through the cross-signed new CA, so clients that trust only the old CA keep connecting")
    return rolled


def _retire(material: CertMaterial, steps: list[str]) -> CertMaterial:
    signing = material.signing_ca
    assert signing is not None
    old = [c for c in material.bundle if c is not signing]
    steps.append(f"CA rollover finished: {', '.join(_cn(c) for c in old)} no longer trusted, "
                 f"the serving certificate is sent without the cross-signed intermediate")
    return replace(material, bundle=(signing,), chain=(material.leaf,))


def _serving_due(material: CertMaterial, policy: RotationPolicy, now: dt.datetime,
                 dns_names: list[str] | None) -> str | None:
    leaf, signing = material.leaf, material.signing_ca
    assert signing is not None
    left = leaf.not_valid_after_utc - now
    if left < dt.timedelta(days=policy.renew_before_days):
        return f"it expires in {max(left.days, 0)} days" if left > dt.timedelta(0) else "it has expired"
    if not issued_by(leaf, signing):
        return f"it was not issued by the signing CA {_cn(signing)}"
    if dns_names is not None and sorted(set(dns_names)) != sorted(set(serving_names(leaf)[0])):
        return "its DNS names differ from the requested ones"
    return None


def plan_rotation(current: CertMaterial, policy: RotationPolicy = RotationPolicy(), now: dt.datetime | None = None,
                  rotate_ca: bool = False, dns_names: list[str] | None = None) -> RotationPlan:
    """What a rotation run at `now` does; `after` equals `before` when nothing is due."""
    now = now or now_utc()
    if current.ca_key is None or current.signing_ca is None:
        raise RotationError("no CA key (ca.key): these certificates are issued elsewhere (cert-manager?) and "
                            "cannot be rotated here")
    steps: list[str] = []
    material = _prune_expired(current, now, steps)
    signing = material.signing_ca
    assert signing is not None
    ca_left = signing.not_valid_after_utc - now
    in_overlap = _rollover_in_progress(material)
    if rotate_ca and in_overlap:
        raise RotationError(f"a CA rollover is in progress (the bundle trusts {len(material.bundle)} CAs); "
                            f"rotate the CA again after the overlap of {_hours(policy.overlap)} has passed and a rotation "
                            f"has retired the old CA")
    if rotate_ca or (ca_left < dt.timedelta(days=policy.ca_renew_before_days) and not in_overlap):
        why = "requested" if rotate_ca else f"{_cn(signing)} expires in {max(ca_left.days, 0)} days"
        material = _introduce_ca(material, policy, now, dns_names, why, steps)
        return _checked(RotationPlan(current, material, tuple(steps)), now)
    if in_overlap and now - _introduced_at(signing) >= policy.overlap:
        material = _retire(material, steps)
    reason = _serving_due(material, policy, now, dns_names)
    if reason:
        overlap_chain = material.intermediates if _rollover_in_progress(material) else ()
        material = _serving(material, signing, material.ca_key, policy, now, dns_names, overlap_chain)  # type: ignore[arg-type]
        steps.append(f"renewed the serving certificate: {reason}")
    return _checked(RotationPlan(current, material, tuple(steps)), now)


def _checked(plan: RotationPlan, now: dt.datetime) -> RotationPlan:
    """The continuity the rollout order relies on: old and new certificates, old and new bundles, all mix.

    The bundle (API server) and the serving files (each replica, via the kubelet) are updated at
    different moments, so every combination must verify. A new chain the old bundle cannot verify only
    happens with a CA made before rollover CAs allowed an intermediate (path length 0); it is a warning,
    and publishing the bundle first (as `publish` does) still keeps clients of the bundle working.
    """
    if not plan.changed:
        return plan
    failure = verify_serving(plan.after.chain, plan.after.bundle, now)
    if failure:
        raise RotationError(f"the new serving chain does not verify with the new bundle: {failure}")
    warnings = []
    if verify_serving(plan.before.chain, plan.before.bundle, now) is None:
        failure = verify_serving(plan.before.chain, plan.after.bundle, now)
        if failure:
            raise RotationError(f"the current serving chain would not verify with the new bundle: {failure}")
        failure = verify_serving(plan.after.chain, plan.before.bundle, now)
        if failure and _rollover_in_progress(plan.after):
            warnings.append(f"clients that still trust only the previous ca.crt cannot verify the new serving "
                            f"chain ({failure}); update their CA bundle before the servers reload")
    return replace(plan, warnings=tuple(warnings))


def rotate_directory(directory: Path, policy: RotationPolicy = RotationPolicy(), now: dt.datetime | None = None,
                     rotate_ca: bool = False, dns_names: list[str] | None = None, dry_run: bool = False) -> RotationPlan:
    """Rotate a cert dir in place (trust first, then the serving pair: see material.write_directory)."""
    plan = plan_rotation(read_directory(directory), policy, now, rotate_ca, dns_names)
    if plan.changed and not dry_run:
        write_directory(directory, plan.after)
    return plan
