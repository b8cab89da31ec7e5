"""`quartermaster certs rotate --secret`: the CronJob's rotation of the chart's Secret, through the real
`kubernetes` client against the test API server (tests/kube/apiserver.py), with the chart's own objects."""

import base64
import datetime as dt

import pytest

from tests.chart.support import NAMESPACE, render
from tests.kube import apiserver as fake
from webhook.certs.material import CertMaterial
from webhook.certs.verify import verify_serving
from webhook.cli import main
from webhook.deploy.secret_rotation import rotate_secret
from webhook.kube.webhook_ca import ApiCallFailed, WebhookCaClient

SECRET = "qm-quartermaster-tls"
WEBHOOKS = "qm-quartermaster"
HOOKS = 3  # the chart's webhooks: mutate, validate, validate-policy
SERVICE = f"qm-quartermaster.{NAMESPACE}.svc"


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    """The test API server, holding what `helm install` of the chart would have created."""
    monkeypatch.setitem(fake.RESOURCES, ("", "v1", "secrets"), ("Secret", True))
    monkeypatch.setitem(fake.RESOURCES, ("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations"),
                        ("MutatingWebhookConfiguration", False))
    monkeypatch.setitem(fake.RESOURCES, ("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations"),
                        ("ValidatingWebhookConfiguration", False))
    server = fake.FakeApiServer().start()
    rendered = render()
    for obj in (rendered.one("Secret"), rendered.one("MutatingWebhookConfiguration"),
                rendered.one("ValidatingWebhookConfiguration")):
        server.put(obj)
    yield server, server.kubeconfig(tmp_path / "kubeconfig")
    server.stop()


def stored_material(server):
    secret = server.get("v1", "Secret", NAMESPACE, SECRET)
    return CertMaterial.from_data({k: base64.b64decode(v) for k, v in secret["data"].items()})


def ca_bundles(server):
    return [base64.b64decode(hook["clientConfig"]["caBundle"])
            for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
            for hook in server.get("admissionregistration.k8s.io/v1", kind, "", WEBHOOKS)["webhooks"]]


def test_ca_rollover_publishes_bundle_before_secret(cluster):
    server, kubeconfig = cluster
    before = stored_material(server)
    with WebhookCaClient.connect(kubeconfig, in_cluster=False) as client:
        result = rotate_secret(client, NAMESPACE, SECRET, [WEBHOOKS], [WEBHOOKS], rotate_ca=True)
    after = stored_material(server)
    assert len(after.bundle) == 2 and after.bundle[0] == before.bundle[0]
    assert ca_bundles(server) == [after.to_data()["ca.crt"]] * HOOKS
    puts = [s.plural for s in server.seen("PUT")]
    assert puts == ["mutatingwebhookconfigurations", "validatingwebhookconfigurations", "secrets"]
    assert len(result.published) == 3
    now = dt.datetime.now(dt.timezone.utc)
    for trusted in ((before.bundle[0],), (after.bundle[1],), after.bundle):  # old CA, new CA, bundle
        assert verify_serving(after.chain, trusted, now, SERVICE) is None
    secret = server.get("v1", "Secret", NAMESPACE, SECRET)
    assert secret["type"] == "kubernetes.io/tls" and secret["metadata"]["labels"]["app.kubernetes.io/instance"] == "qm"


def test_nothing_due_still_repairs_a_reset_ca_bundle(cluster):
    """A render without cluster access (helm template, Argo CD) may have put another caBundle in place."""
    server, kubeconfig = cluster
    validating = server.get("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "", WEBHOOKS)
    validating["webhooks"][0]["clientConfig"]["caBundle"] = base64.b64encode(b"stale").decode()
    server.put(validating)
    with WebhookCaClient.connect(kubeconfig, in_cluster=False) as client:
        result = rotate_secret(client, NAMESPACE, SECRET, [WEBHOOKS], [WEBHOOKS])
    assert not result.plan.changed
    assert [s.plural for s in server.seen("PUT")] == ["validatingwebhookconfigurations"]
    assert ca_bundles(server) == [stored_material(server).to_data()["ca.crt"]] * HOOKS


def test_concurrent_change_of_the_secret_is_not_overwritten(cluster):
    server, kubeconfig = cluster
    before = server.get("v1", "Secret", NAMESPACE, SECRET)
    server.fail_next("PUT", "secrets", 409, "Conflict")
    with WebhookCaClient.connect(kubeconfig, in_cluster=False) as client:
        with pytest.raises(ApiCallFailed, match="409 Conflict"):
            rotate_secret(client, NAMESPACE, SECRET, [WEBHOOKS], [], rotate_ca=True)
    assert server.get("v1", "Secret", NAMESPACE, SECRET)["data"] == before["data"]
    # the next run puts the caBundle back in line with the Secret as it is
    with WebhookCaClient.connect(kubeconfig, in_cluster=False) as client:
        rotate_secret(client, NAMESPACE, SECRET, [WEBHOOKS], [WEBHOOKS])
    assert ca_bundles(server) == [stored_material(server).to_data()["ca.crt"]] * HOOKS


def test_cronjob_command_line(cluster, capsys):
    server, kubeconfig = cluster
    cron = render().one("CronJob")
    args = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"]
    local = [a for a in args if a != "--in-cluster"] + ["--kubeconfig", str(kubeconfig), "--ca"]
    assert main(local) == 0
    out = capsys.readouterr().out
    assert "CA rollover" in out and f"secret {NAMESPACE}/{SECRET} updated" in out
    assert main(["certs", "inspect", "--secret", f"{NAMESPACE}/{SECRET}", "--kubeconfig", str(kubeconfig)]) == 0
    assert "verifies with each of" in capsys.readouterr().out
    assert main(["certs", "bundle", "--secret", f"{NAMESPACE}/missing", "--kubeconfig", str(kubeconfig)]) == 2
    assert "does not exist" in capsys.readouterr().err
