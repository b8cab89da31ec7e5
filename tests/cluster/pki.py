"""The test control plane's own PKI: one CA, the API server's serving certificate, a client certificate per
component (the identity each one has in the API server's authorizer) and the service-account signing key."""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_DAYS = 30
_API_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
              "kubernetes.default.svc.cluster.local")


@dataclass(frozen=True)
class ClientIdentity:
    """Who a component is to the API server: user name and groups, as a client certificate carries them."""
    file_stem: str
    user: str
    groups: tuple[str, ...] = ()


ADMIN = ClientIdentity("admin", "qmcluster-admin", ("system:masters",))
CONTROLLER_MANAGER = ClientIdentity("controller-manager", "system:kube-controller-manager")
SCHEDULER = ClientIdentity("scheduler", "system:kube-scheduler")
# the simulated nodes write node objects, leases and pod status for many nodes at once: an admin, not system:node:<name>
NODES = ClientIdentity("nodes", "qmcluster-nodes", ("system:masters",))
COMPONENTS = (ADMIN, CONTROLLER_MANAGER, SCHEDULER, NODES)


def _name(common: str, groups: tuple[str, ...] = ()) -> x509.Name:
    parts = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
    return x509.Name(parts + [x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _pem_key(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


@dataclass(frozen=True)
class ClusterPki:
    directory: Path

    @property
    def ca_cert(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca.key"

    @property
    def serving_cert(self) -> Path:
        return self.directory / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.directory / "apiserver.key"

    @property
    def sa_key(self) -> Path:
        return self.directory / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.directory / "sa.pub"

    def client_cert(self, who: ClientIdentity) -> Path:
        return self.directory / f"{who.file_stem}.crt"

    def client_key(self, who: ClientIdentity) -> Path:
        return self.directory / f"{who.file_stem}.key"


def _issue(subject: x509.Name, issuer: x509.Name, public_key, signer, *, ca: bool = False,
           usages: tuple = (), san: x509.SubjectAlternativeName | None = None) -> x509.Certificate:
    now = dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=5)
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
               .serial_number(x509.random_serial_number()).not_valid_before(now)
               .not_valid_after(now + dt.timedelta(days=_DAYS))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False),
                                        critical=True)
    else:
        builder = builder.add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False),
                                        critical=True)
        builder = builder.add_extension(x509.ExtendedKeyUsage(list(usages)), critical=False)
    if san is not None:
        builder = builder.add_extension(san, critical=False)
    return builder.sign(signer, hashes.SHA256())


def write_pki(directory: Path) -> ClusterPki:
    """A fresh CA and everything the components need, written with private files 0600."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = ClusterPki(directory)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("qmcluster CA")
    ca = _issue(ca_name, ca_name, ca_key.public_key(), ca_key, ca=True)
    _write(pki.ca_cert, _pem_cert(ca), private=False)
    _write(pki.ca_key, _pem_key(ca_key), private=True)

    serving_key = ec.generate_private_key(ec.SECP256R1())
    san = x509.SubjectAlternativeName([x509.DNSName(n) for n in _API_NAMES]
                                      + [x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                         x509.IPAddress(ipaddress.ip_address("10.96.0.1"))])
    serving = _issue(_name("kube-apiserver"), ca_name, serving_key.public_key(), ca_key,
                     usages=(ExtendedKeyUsageOID.SERVER_AUTH,), san=san)
    _write(pki.serving_cert, _pem_cert(serving), private=False)
    _write(pki.serving_key, _pem_key(serving_key), private=True)

    for who in COMPONENTS:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _issue(_name(who.user, who.groups), ca_name, key.public_key(), ca_key,
                      usages=(ExtendedKeyUsageOID.CLIENT_AUTH,))
        _write(pki.client_cert(who), _pem_cert(cert), private=False)
        _write(pki.client_key(who), _pem_key(key), private=True)

    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write(pki.sa_key, _pem_key(sa_key), private=True)
    _write(pki.sa_pub, sa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                        serialization.PublicFormat.SubjectPublicKeyInfo), private=False)
    return pki


def _write(path: Path, data: bytes, *, private: bool) -> None:
    path.write_bytes(data)
    path.chmod(0o600 if private else 0o644)


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def kubeconfig_text(server: str, pki: ClusterPki, *, user_name: str, client: ClientIdentity | None = None,
                    token: str | None = None) -> str:
    """A self-contained kubeconfig (certificates embedded) for a client certificate or a bearer token."""
    user: dict[str, str] = {}
    if client is not None:
        user = {"client-certificate-data": _b64(pki.client_cert(client)),
                "client-key-data": _b64(pki.client_key(client))}
    if token is not None:
        user = {"token": token}
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "qmcluster", "cluster": {"server": server,
                                                        "certificate-authority-data": _b64(pki.ca_cert)}}],
        "users": [{"name": user_name, "user": user}],
        "contexts": [{"name": user_name, "context": {"cluster": "qmcluster", "user": user_name}}],
        "current-context": user_name,
    }
    return yaml.safe_dump(config, sort_keys=False)


def issue_client(pki: ClusterPki, who: ClientIdentity) -> None:
    """A client certificate for one more identity (a profile user, say), signed by the cluster's CA."""
    ca = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    ca_key = serialization.load_pem_private_key(pki.ca_key.read_bytes(), password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _issue(_name(who.user, who.groups), ca.subject, key.public_key(), ca_key,
                  usages=(ExtendedKeyUsageOID.CLIENT_AUTH,))
    _write(pki.client_cert(who), _pem_cert(cert), private=False)
    _write(pki.client_key(who), _pem_key(key), private=True)
