"""x509_decode: the fields of a PEM certificate or CSR Kyverno exposes to policies."""

from __future__ import annotations

from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa


def decode(pem: str) -> dict[str, Any]:
    data = pem.encode()
    if b"CERTIFICATE REQUEST" in data:
        csr = x509.load_pem_x509_csr(data)
        return {"Subject": _name(csr.subject), "SignatureAlgorithm": csr.signature_algorithm_oid._name}
    cert = x509.load_pem_x509_certificate(data)
    return {
        "PublicKey": _public_key(cert.public_key()),
        "Subject": _name(cert.subject), "Issuer": _name(cert.issuer), "SerialNumber": cert.serial_number,
        "NotBefore": cert.not_valid_before_utc.isoformat().replace("+00:00", "Z"),
        "NotAfter": cert.not_valid_after_utc.isoformat().replace("+00:00", "Z"),
        "Version": cert.version.value + 1,
    }


def _name(name: x509.Name) -> dict[str, Any]:
    return {"CommonName": next((a.value for a in name if a.oid == x509.NameOID.COMMON_NAME), ""),
            "Organization": [a.value for a in name if a.oid == x509.NameOID.ORGANIZATION_NAME]}


def _public_key(key: Any) -> dict[str, Any]:
    """Go marshals an *rsa.PublicKey as {N, E}; other key types keep only their type name."""
    if isinstance(key, rsa.RSAPublicKey):
        numbers = key.public_numbers()
        return {"N": numbers.n, "E": numbers.e}
    return {"Type": type(key).__name__}
