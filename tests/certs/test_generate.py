import ipaddress
import stat

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from webhook.certs.generate import CertPaths, ensure_certificates, service_names


def test_generates_ca_and_serving_cert(tmp_path):
    assert ensure_certificates(tmp_path, service_names("quartermaster", "platform"))
    paths = CertPaths(tmp_path)
    for private in (paths.key, paths.ca_key):
        assert stat.S_IMODE(private.stat().st_mode) == 0o600
    ca = x509.load_pem_x509_certificate(paths.ca_cert.read_bytes())
    cert = x509.load_pem_x509_certificate(paths.cert.read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {"localhost", "quartermaster.platform.svc", "quartermaster.platform.svc.cluster.local"} <= set(sans.get_values_for_type(x509.DNSName))
    assert ipaddress.ip_address("127.0.0.1") in sans.get_values_for_type(x509.IPAddress)
    cert.verify_directly_issued_by(ca)
    assert isinstance(ca.public_key(), ec.EllipticCurvePublicKey)


def test_keeps_existing_certificates(tmp_path):
    ensure_certificates(tmp_path, ["localhost"])
    before = (tmp_path / "tls.crt").read_bytes()
    assert not ensure_certificates(tmp_path, ["localhost"])
    assert (tmp_path / "tls.crt").read_bytes() == before


def test_reuses_ca_when_only_serving_pair_missing(tmp_path):
    ensure_certificates(tmp_path, ["localhost"])
    ca = (tmp_path / "ca.crt").read_bytes()
    (tmp_path / "tls.crt").unlink()
    assert ensure_certificates(tmp_path, ["localhost"])
    assert (tmp_path / "ca.crt").read_bytes() == ca
    cert = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    cert.verify_directly_issued_by(x509.load_pem_x509_certificate(ca))
