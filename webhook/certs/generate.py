"""Write a CA and a serving certificate when the certificate directory has none.

The CA signs the serving certificate so that the API server trusts `ca.crt` (the caBundle) while
the serving certificate can be renewed under the same CA.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from webhook.model.quickinit import frozen_dataclass

CA_CERT, CA_KEY, TLS_CERT, TLS_KEY = "ca.crt", "ca.key", "tls.crt", "tls.key"


@frozen_dataclass
class CertPaths:
    directory: Path

    @property
    def cert(self) -> Path:
        return self.directory / TLS_CERT

    @property
    def key(self) -> Path:
        return self.directory / TLS_KEY

    @property
    def ca_cert(self) -> Path:
        return self.directory / CA_CERT

    @property
    def ca_key(self) -> Path:
        return self.directory / CA_KEY


def service_names(service: str, namespace: str) -> list[str]:
    return ["localhost", service, f"{service}.{namespace}", f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"]


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _write_private(path: Path, data: bytes) -> None:
    """Create with 0600 from the start (no window where the key is world-readable), then swap in atomically."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def _write_public(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


# The lifetimes docs/deploy.md promises, for generated and rotated certificates alike (RotationPolicy).
SERVING_DAYS, CA_DAYS = 90, 1825


def make_ca(common_name: str = "Quartermaster CA", days: int = CA_DAYS,
            now: dt.datetime | None = None) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    # path length 1, not 0: a CA rollover cross-signs its successor with this CA (one intermediate), so that
    # clients still trusting only this CA verify the successor's serving certificates (webhook.certs.rotate)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = now or _now()
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=1), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                     key_encipherment=False, data_encipherment=False, key_agreement=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def make_serving_cert(ca_cert: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey, dns_names: list[str],
                      ips: list[str] = ("127.0.0.1", "::1"), days: int = SERVING_DAYS,
                      now: dt.datetime | None = None) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = now or _now()
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dict.fromkeys(dns_names)]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_names[-1] if dns_names else "quartermaster")]))
        .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return cert, key


def write_serving_cert(paths: CertPaths, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> None:
    # key first: a reader that sees the new cert with the old key fails its pair check and retries
    _write_private(paths.key, _pem_key(key))
    _write_public(paths.cert, cert.public_bytes(serialization.Encoding.PEM))


def ensure_certificates(directory: Path, dns_names: list[str]) -> bool:
    """Generate into `directory` unless tls.crt and tls.key exist. Returns True when it wrote files."""
    paths = CertPaths(directory)
    if paths.cert.exists() and paths.key.exists():
        return False
    directory.mkdir(parents=True, exist_ok=True)
    if paths.ca_cert.exists() and paths.ca_key.exists():
        ca_cert = x509.load_pem_x509_certificate(paths.ca_cert.read_bytes())
        ca_key = serialization.load_pem_private_key(paths.ca_key.read_bytes(), password=None)
    else:
        ca_cert, ca_key = make_ca()
        _write_private(paths.ca_key, _pem_key(ca_key))
        _write_public(paths.ca_cert, ca_cert.public_bytes(serialization.Encoding.PEM))
    cert, key = make_serving_cert(ca_cert, ca_key, dns_names)  # type: ignore[arg-type]
    write_serving_cert(paths, cert, key)
    return True
