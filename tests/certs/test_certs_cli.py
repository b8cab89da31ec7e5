"""`quartermaster certs inspect|rotate|bundle` and `quartermaster crds` through the real entry point."""

import base64
import json

import yaml
from cryptography import x509

from tests.support import assert_valid_k8s
from webhook.certs.generate import ensure_certificates, service_names
from webhook.certs.material import read_directory
from webhook.cli import main
from webhook.platform import platform_kinds


def certs_dir(tmp_path):
    directory = tmp_path / "certs"
    ensure_certificates(directory, service_names("quartermaster", "platform"))
    return directory


def test_inspect_text_and_json(tmp_path, capsys):
    directory = certs_dir(tmp_path)
    assert main(["certs", "inspect", "--cert-dir", str(directory)]) == 0
    text = capsys.readouterr().out
    assert "CN=Quartermaster CA" in text and "quartermaster.platform.svc" in text
    assert "serving chain verifies with ca.crt: yes" in text and "days left" in text
    assert main(["certs", "inspect", "--cert-dir", str(directory), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    roles = [c["role"] for c in report["certificates"]]
    assert roles == ["CA", "serving"] and report["verifies_with_bundle"] is True
    assert "quartermaster.platform.svc.cluster.local" in report["certificates"][1]["dns_names"]


def test_inspect_reports_a_chain_that_does_not_verify(tmp_path, capsys):
    directory = certs_dir(tmp_path)
    other = certs_dir(tmp_path / "other")
    (directory / "ca.crt").write_bytes((other / "ca.crt").read_bytes())
    (directory / "ca.key").unlink()
    assert main(["certs", "inspect", "--cert-dir", str(directory)]) == 1
    assert "does not verify" in capsys.readouterr().out


def test_rotate_commands(tmp_path, capsys):
    directory = certs_dir(tmp_path)
    assert main(["certs", "rotate", "--cert-dir", str(directory)]) == 0
    assert "nothing due" in capsys.readouterr().out
    before = (directory / "tls.crt").read_bytes()
    assert main(["certs", "rotate", "--cert-dir", str(directory), "--ca", "--dry-run"]) == 0
    assert "would: CA rollover" in capsys.readouterr().out
    assert (directory / "tls.crt").read_bytes() == before
    assert main(["certs", "rotate", "--cert-dir", str(directory), "--ca"]) == 0
    assert "CA rollover" in capsys.readouterr().out
    assert len(read_directory(directory).bundle) == 2
    assert main(["certs", "rotate", "--cert-dir", str(directory), "--ca"]) == 1  # overlap in progress
    assert "refused" in capsys.readouterr().err


def test_rotate_bad_input(tmp_path, capsys):
    assert main(["certs", "rotate", "--cert-dir", str(tmp_path / "none")]) == 2
    assert "missing" in capsys.readouterr().err
    directory = certs_dir(tmp_path)
    assert main(["certs", "rotate", "--cert-dir", str(directory), "--renew-before-days", "400"]) == 2
    assert "renew_before_days" in capsys.readouterr().err
    assert main(["certs", "rotate", "--cert-dir", str(directory), "--mutating-webhook", "qm"]) == 2
    assert "--secret" in capsys.readouterr().err


def test_bundle(tmp_path, capsys):
    directory = certs_dir(tmp_path)
    assert main(["certs", "bundle", "--cert-dir", str(directory)]) == 0
    pem = capsys.readouterr().out.encode()
    assert pem == (directory / "ca.crt").read_bytes()
    assert main(["certs", "bundle", "--cert-dir", str(directory), "--base64"]) == 0
    line = capsys.readouterr().out
    assert line.count("\n") == 1 and base64.b64decode(line) == pem
    x509.load_pem_x509_certificate(pem)


def test_crds_command(tmp_path, capsys):
    assert main(["crds"]) == 0
    docs = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    assert {d["spec"]["names"]["kind"] for d in docs} == {k.kind for k in platform_kinds()}
    for doc in docs:
        assert_valid_k8s(doc)
    assert main(["crds", "--output", str(tmp_path / "crds")]) == 0
    assert len(list((tmp_path / "crds").glob("*.yaml"))) == len(docs)
