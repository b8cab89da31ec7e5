"""The certificate material of one webhook, as files (a cert dir) or as the data of a Kubernetes Secret.

The four entries have the same names in both places, so a Secret mounted as a volume is a cert dir:
- `ca.crt`: the trust bundle, every CA a client should trust (the webhook configurations' caBundle);
- `ca.key`: the key of the CA that signs serving certificates (absent when another issuer signs them);
- `tls.crt`: the serving certificate first, then any intermediate (the cross-signed CA during a rollover);
- `tls.key`: the serving certificate's key.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Union

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from webhook.certs.generate import CA_CERT, CA_KEY, TLS_CERT, TLS_KEY, _write_private, _write_public
from webhook.model.quickinit import frozen_dataclass

PrivateKey = Union[ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey]  # ours are EC; Helm's genCA writes RSA


class CertMaterialError(Exception):
    """The material is missing, unreadable, or inconsistent."""


def pem_certs(certs: tuple[x509.Certificate, ...]) -> bytes:
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs)


def pem_key(key: PrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def same_key(cert: x509.Certificate, key: PrivateKey) -> bool:
    return cert.public_key().public_numbers() == key.public_key().public_numbers()


def _load_certs(name: str, data: bytes) -> tuple[x509.Certificate, ...]:
    try:
        certs = tuple(x509.load_pem_x509_certificates(data))
    except ValueError as exc:
        raise CertMaterialError(f"{name}: not PEM certificates ({exc})") from None
    return certs


def _load_key(name: str, data: bytes) -> PrivateKey:
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise CertMaterialError(f"{name}: not an unencrypted PEM private key ({exc})") from None
    if not isinstance(key, (ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey)):
        raise CertMaterialError(f"{name}: only EC and RSA keys are supported")
    return key


@frozen_dataclass
class CertMaterial:
    bundle: tuple[x509.Certificate, ...]
    ca_key: PrivateKey | None
    chain: tuple[x509.Certificate, ...]
    key: PrivateKey

    @property
    def leaf(self) -> x509.Certificate:
        return self.chain[0]

    @property
    def intermediates(self) -> tuple[x509.Certificate, ...]:
        return self.chain[1:]

    @property
    def signing_ca(self) -> x509.Certificate | None:
        """The bundle's CA whose key is `ca.key`: the one that signs new serving certificates."""
        if self.ca_key is None:
            return None
        return next((c for c in self.bundle if same_key(c, self.ca_key)), None)

    @classmethod
    def from_data(cls, data: Mapping[str, bytes]) -> "CertMaterial":
        """From file contents or decoded Secret data, keyed by ca.crt, ca.key, tls.crt, tls.key."""
        missing = [name for name in (CA_CERT, TLS_CERT, TLS_KEY) if not data.get(name)]
        if missing:
            raise CertMaterialError(f"missing {', '.join(missing)}")
        bundle = _load_certs(CA_CERT, data[CA_CERT])
        chain = _load_certs(TLS_CERT, data[TLS_CERT])
        if not bundle or not chain:
            raise CertMaterialError(f"{CA_CERT if not bundle else TLS_CERT}: no certificate")
        key = _load_key(TLS_KEY, data[TLS_KEY])
        if not same_key(chain[0], key):
            raise CertMaterialError(f"{TLS_KEY} does not belong to the first certificate of {TLS_CERT}")
        ca_key = _load_key(CA_KEY, data[CA_KEY]) if data.get(CA_KEY) else None
        material = cls(bundle, ca_key, chain, key)
        if ca_key is not None and material.signing_ca is None:
            raise CertMaterialError(f"{CA_KEY} belongs to no CA of {CA_CERT}")
        return material

    def to_data(self) -> dict[str, bytes]:
        data = {CA_CERT: pem_certs(self.bundle), TLS_CERT: pem_certs(self.chain), TLS_KEY: pem_key(self.key)}
        if self.ca_key is not None:
            data[CA_KEY] = pem_key(self.ca_key)
        return data


def read_directory(directory: Path) -> CertMaterial:
    data = {}
    for name in (CA_CERT, CA_KEY, TLS_CERT, TLS_KEY):
        try:
            data[name] = (directory / name).read_bytes()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise CertMaterialError(f"{directory / name}: {exc.strerror}") from None
    return CertMaterial.from_data(data)


def write_directory(directory: Path, material: CertMaterial) -> None:
    """Trust first (ca.crt, ca.key), then the serving pair, key before certificate.

    The server polls tls.crt + tls.key and loads them only as a matching pair, so it never serves a
    half-written rotation; clients reading ca.crt see the new bundle before the new chain is served.
    """
    directory.mkdir(parents=True, exist_ok=True)
    data = material.to_data()
    _write_public(directory / CA_CERT, data[CA_CERT])
    if CA_KEY in data:
        _write_private(directory / CA_KEY, data[CA_KEY])
    elif (directory / CA_KEY).exists():
        os.unlink(directory / CA_KEY)
    _write_private(directory / TLS_KEY, data[TLS_KEY])
    _write_public(directory / TLS_CERT, data[TLS_CERT])
