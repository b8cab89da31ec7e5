"""The chart's certificates: built-in (Helm's genCA, rotated by a CronJob), cert-manager, or external."""

import base64
import datetime as dt

from tests.chart.support import NAMESPACE, VARIANTS, render
from webhook.certs.material import CertMaterial
from webhook.certs.rotate import RotationPolicy, plan_rotation
from webhook.certs.verify import verify_serving

SERVICE_NAMES = ["qm-quartermaster", f"qm-quartermaster.{NAMESPACE}", f"qm-quartermaster.{NAMESPACE}.svc",
                 f"qm-quartermaster.{NAMESPACE}.svc.cluster.local"]


def webhook_ca_bundles(rendered):
    return [hook["clientConfig"].get("caBundle") for c in rendered.objects if c["kind"].endswith("WebhookConfiguration")
            for hook in c["webhooks"]]


def builtin_material(rendered):
    data = {k: base64.b64decode(v) for k, v in rendered.one("Secret")["data"].items()}
    return CertMaterial.from_data(data)


def test_builtin_secret_and_ca_bundle_belong_together():
    rendered = render()
    secret = rendered.one("Secret")
    assert secret["type"] == "kubernetes.io/tls"
    assert set(secret["data"]) == {"ca.crt", "ca.key", "tls.crt", "tls.key"}
    bundles = webhook_ca_bundles(rendered)
    assert len(bundles) == 3 and set(bundles) == {secret["data"]["ca.crt"]}  # mutate, validate, validate-policy
    material = builtin_material(rendered)
    now = dt.datetime.now(dt.timezone.utc)
    for name in SERVICE_NAMES[2:]:  # the API server calls <service>.<namespace>.svc
        assert verify_serving(material.chain, material.bundle, now, name) is None
    assert verify_serving(material.chain, material.bundle, now, "evil.example.org") is not None
    days = (material.leaf.not_valid_after_utc - now).days
    assert 88 <= days <= 90  # certificates.builtin.servingDays


def test_helm_generated_material_rotates_with_overlap():
    """The CronJob's `certs rotate` works on what Helm's genCA made (RSA keys, its own extensions)."""
    material = builtin_material(render())
    now = dt.datetime.now(dt.timezone.utc)
    assert not plan_rotation(material, RotationPolicy(), now).changed
    due = plan_rotation(material, RotationPolicy(), material.leaf.not_valid_after_utc - dt.timedelta(days=10))
    assert due.changed and due.after.signing_ca is material.signing_ca
    rolled = plan_rotation(material, RotationPolicy(), now, rotate_ca=True).after
    old_ca, new_ca = rolled.bundle
    name = SERVICE_NAMES[2]
    for trusted in ((old_ca,), (new_ca,), rolled.bundle):
        assert verify_serving(rolled.chain, trusted, now, name) is None


def test_rotation_cronjob():
    rendered = render()
    cron = rendered.one("CronJob")
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    args = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[:3] == ["certs", "rotate", "--in-cluster"]
    assert f"--secret={NAMESPACE}/{rendered.one('Secret')['metadata']['name']}" in args
    assert "--mutating-webhook=qm-quartermaster" in args and "--validating-webhook=qm-quartermaster" in args
    assert {"--serving-days=90", "--renew-before-days=30", "--overlap-hours=24"} <= set(args)
    off = render({"certificates": {"builtin": {"rotation": {"enabled": False}}}})
    assert "CronJob" not in off.kinds()


def test_cert_manager_issues_and_injects():
    rendered = render(VARIANTS["cert-manager"])
    assert "Secret" not in rendered.kinds() and "CronJob" not in rendered.kinds()
    certs = {c["metadata"]["name"]: c for c in rendered.of_kind("Certificate")}
    issuers = {i["metadata"]["name"]: i for i in rendered.of_kind("Issuer")}
    serving = certs["qm-quartermaster-serving"]
    assert set(serving["spec"]["dnsNames"]) == set(SERVICE_NAMES)
    ca_issuer = issuers[serving["spec"]["issuerRef"]["name"]]
    assert certs["qm-quartermaster-ca"]["spec"]["isCA"] is True
    assert ca_issuer["spec"]["ca"]["secretName"] == certs["qm-quartermaster-ca"]["spec"]["secretName"]
    assert issuers[certs["qm-quartermaster-ca"]["spec"]["issuerRef"]["name"]]["spec"] == {"selfSigned": {}}
    volume = next(v for v in rendered.one("Deployment")["spec"]["template"]["spec"]["volumes"] if v["name"] == "tls")
    assert volume["secret"]["secretName"] == serving["spec"]["secretName"]
    for config in (c for c in rendered.objects if c["kind"].endswith("WebhookConfiguration")):
        assert config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == f"{NAMESPACE}/qm-quartermaster-serving"
    assert webhook_ca_bundles(rendered) == [None] * 3  # cainjector fills them


def test_cert_manager_with_an_existing_issuer():
    rendered = render(VARIANTS["cert-manager-issuer"])
    assert "Issuer" not in rendered.kinds()
    (serving,) = rendered.of_kind("Certificate")
    assert serving["spec"]["issuerRef"] == {"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}


def test_external_certificates():
    rendered = render(VARIANTS["external-certs"])
    assert not {"Secret", "CronJob", "Certificate"} & rendered.kinds()
    assert webhook_ca_bundles(rendered) == ["Y2E="] * 3
    volume = next(v for v in rendered.one("Deployment")["spec"]["template"]["spec"]["volumes"] if v["name"] == "tls")
    assert volume["secret"]["secretName"] == "corp-webhook-tls"


def test_service_monitor_scrapes_over_verified_tls():
    rendered = render(VARIANTS["service-monitor"])
    monitor = rendered.one("ServiceMonitor")
    service = rendered.one("Service")
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert all(service["metadata"]["labels"][k] == v for k, v in monitor["spec"]["selector"]["matchLabels"].items())
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == service["spec"]["ports"][0]["name"] and endpoint["path"] == "/metrics"
    assert endpoint["scheme"] == "https" and "insecureSkipVerify" not in endpoint["tlsConfig"]
    assert endpoint["tlsConfig"]["ca"]["secret"] == {"name": rendered.one("Secret")["metadata"]["name"], "key": "ca.crt"}
    material = builtin_material(rendered)
    assert verify_serving(material.chain, material.bundle, dt.datetime.now(dt.timezone.utc),
                          endpoint["tlsConfig"]["serverName"]) is None
