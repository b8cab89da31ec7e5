"""x509_decode returns Kyverno's field names (Go's x509.Certificate: Subject, Issuer, ...)."""

from __future__ import annotations

import datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from webhook.families.kyverno.jmespath_functions import query


def test_x509_decode_names_subject_and_issuer_as_kyverno_does():
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "registry.example.org")])
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(7).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    decoded = query("x509_decode(pem)", {"pem": pem})
    assert {"Subject", "Issuer", "SerialNumber", "NotBefore", "NotAfter"} <= set(decoded)
    assert "RequestSubject" not in decoded and decoded["SerialNumber"] == 7
