"""Rotation decisions at simulated times: renewal windows, CA rollover with cross-signing, retirement."""

import datetime as dt

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from webhook.certs.generate import ensure_certificates, make_serving_cert, service_names
from webhook.certs.inspect import inspect_material
from webhook.certs.material import CertMaterial, CertMaterialError, read_directory
from webhook.certs.rotate import RotationError, RotationPolicy, plan_rotation, rotate_directory
from webhook.certs.verify import serving_names, verify_serving

NAMES = service_names("quartermaster", "platform")
POLICY = RotationPolicy()
NOW = dt.datetime.now(dt.timezone.utc)


@pytest.fixture
def material(tmp_path):
    ensure_certificates(tmp_path, NAMES)
    return read_directory(tmp_path)


def verifies(material, trusted, now=NOW, name="quartermaster.platform.svc"):
    return verify_serving(material.chain, tuple(trusted), now, name) is None


def test_nothing_due_on_fresh_material(material):
    plan = plan_rotation(material, POLICY, NOW)
    assert not plan.changed and plan.after == material


def test_serving_certificate_renewed_before_expiry(material):
    expiry = material.leaf.not_valid_after_utc
    assert not plan_rotation(material, POLICY, expiry - dt.timedelta(days=POLICY.renew_before_days + 1)).changed
    at = expiry - dt.timedelta(days=POLICY.renew_before_days - 1)
    plan = plan_rotation(material, POLICY, at)
    assert plan.changed and "renewed the serving certificate" in plan.steps[0]
    leaf = plan.after.leaf
    assert serving_names(leaf) == serving_names(material.leaf)  # same SANs
    assert leaf.not_valid_after_utc - at > dt.timedelta(days=POLICY.serving_days - 1)
    assert plan.after.bundle == material.bundle and plan.after.ca_key is material.ca_key
    assert verifies(plan.after, material.bundle, at)  # clients keep their trust
    assert not plan.bundle_changed


def test_renewed_certificate_gets_requested_names(material):
    plan = plan_rotation(material, POLICY, NOW, dns_names=["qm.platform.svc"])
    assert serving_names(plan.after.leaf)[0] == ["qm.platform.svc"]


def test_ca_rollover_overlap_and_retirement(material):
    (old_ca,) = material.bundle
    plan = plan_rotation(material, POLICY, NOW, rotate_ca=True)
    rolled = plan.after
    assert plan.bundle_changed and not plan.warnings
    assert rolled.bundle[0] == old_ca and len(rolled.bundle) == 2
    new_ca = rolled.bundle[1]
    assert rolled.signing_ca == new_ca and new_ca.subject != old_ca.subject
    (cross,) = rolled.intermediates
    assert cross.subject == new_ca.subject and cross.issuer == old_ca.subject
    # during the overlap: clients of the old CA, of the new CA, and of the bundle all verify
    for trusted in ((old_ca,), (new_ca,), rolled.bundle):
        assert verifies(rolled, trusted)
    assert verifies(material, rolled.bundle)  # servers that have not reloaded yet: still fine
    # within the overlap nothing more happens; a second rollover is refused
    assert not plan_rotation(rolled, POLICY, NOW + POLICY.overlap / 2).changed
    with pytest.raises(RotationError, match="in progress"):
        plan_rotation(rolled, POLICY, NOW, rotate_ca=True)
    # after it: the old CA and the cross-signed intermediate go
    later = NOW + POLICY.overlap + dt.timedelta(minutes=1)
    retired = plan_rotation(rolled, POLICY, later)
    assert retired.after.bundle == (new_ca,) and retired.after.chain == (rolled.leaf,)
    assert verifies(retired.after, (new_ca,), later) and not verifies(retired.after, (old_ca,), later)
    assert verifies(rolled, retired.after.bundle, later)  # a replica still serving the overlap chain is fine


def test_ca_rollover_starts_by_itself_before_the_ca_expires(material):
    (old_ca,) = material.bundle
    at = old_ca.not_valid_after_utc - dt.timedelta(days=POLICY.ca_renew_before_days - 1)
    plan = plan_rotation(material, POLICY, at)
    assert len(plan.after.bundle) == 2 and "CA rollover" in plan.steps[0]
    assert plan.after.signing_ca.not_valid_after_utc - at > dt.timedelta(days=POLICY.ca_days - 1)
    assert verifies(plan.after, (old_ca,), at)


def test_expired_cas_leave_the_bundle(material):
    long_lived = RotationPolicy(ca_days=5000, ca_renew_before_days=10)
    rolled = plan_rotation(material, long_lived, NOW, rotate_ca=True).after
    after_old_expiry = rolled.bundle[0].not_valid_after_utc + dt.timedelta(days=1)
    plan = plan_rotation(rolled, long_lived, after_old_expiry)
    assert plan.after.bundle == (rolled.signing_ca,) and plan.after.intermediates == ()
    assert any("expired" in step for step in plan.steps)
    assert verifies(plan.after, plan.after.bundle, after_old_expiry)


def test_a_long_expired_ca_is_replaced(material):
    """Nobody ran the rotation for years: a new CA, no overlap possible, and the output says so."""
    at = material.signing_ca.not_valid_after_utc + dt.timedelta(days=30)
    plan = plan_rotation(material, POLICY, at)
    assert plan.after.bundle == (plan.after.signing_ca,) and plan.after.signing_ca not in material.bundle
    assert verifies(plan.after, plan.after.bundle, at)
    assert any("has expired" in step for step in plan.steps)


def test_serving_certificate_never_outlives_its_ca(material):
    at = material.signing_ca.not_valid_after_utc - dt.timedelta(days=200)
    policy = RotationPolicy(serving_days=400, renew_before_days=30, ca_renew_before_days=100)
    plan = plan_rotation(material, policy, at, dns_names=["quartermaster.platform.svc"])  # new names: renewal due
    assert plan.changed and plan.after.signing_ca == material.signing_ca
    assert plan.after.leaf.not_valid_after_utc <= plan.after.signing_ca.not_valid_after_utc


def test_material_without_ca_key_is_not_rotated(material):
    issued_elsewhere = CertMaterial(material.bundle, None, material.chain, material.key)
    with pytest.raises(RotationError, match="cert-manager"):
        plan_rotation(issued_elsewhere, POLICY, NOW)


def test_rsa_ca_like_helms_gen_ca(tmp_path):
    """Helm's genCA makes RSA CAs without a path length: rollover cross-signs them just the same."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Quartermaster CA")])
    ca = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(NOW - dt.timedelta(hours=1))
          .not_valid_after(NOW + dt.timedelta(days=1825))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(True, False, True, False, False, True, False, False, False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
          .sign(key, hashes.SHA256()))
    leaf, leaf_key = make_serving_cert(ca, key, NAMES, [])
    material = CertMaterial((ca,), key, (leaf,), leaf_key)
    rolled = plan_rotation(material, POLICY, NOW, rotate_ca=True).after
    assert verifies(rolled, (ca,)) and verifies(rolled, rolled.bundle[1:])


def test_rotate_directory_writes_what_it_planned(tmp_path):
    ensure_certificates(tmp_path, NAMES)
    before = (tmp_path / "tls.crt").read_bytes()
    dry = rotate_directory(tmp_path, rotate_ca=True, dry_run=True)
    assert dry.changed and (tmp_path / "tls.crt").read_bytes() == before
    plan = rotate_directory(tmp_path, rotate_ca=True)
    on_disk = read_directory(tmp_path)
    assert on_disk.to_data() == plan.after.to_data()
    assert (tmp_path / "tls.key").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "ca.key").stat().st_mode & 0o777 == 0o600
    assert inspect_material(on_disk, NOW).verifies_with == tuple(c.subject.rfc4514_string() for c in on_disk.bundle)


def test_inconsistent_material_is_refused(tmp_path, material):
    data = material.to_data()
    other = CertMaterial.from_data(data)
    with pytest.raises(CertMaterialError, match="tls.key"):
        CertMaterial.from_data({**data, "tls.key": serialization_of_other_key()})
    with pytest.raises(CertMaterialError, match="missing"):
        CertMaterial.from_data({"ca.crt": data["ca.crt"]})
    with pytest.raises(CertMaterialError, match="ca.crt"):
        CertMaterial.from_data({**data, "ca.crt": b"not pem"})
    assert other.to_data() == data


def serialization_of_other_key() -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
