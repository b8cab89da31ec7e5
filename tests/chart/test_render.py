"""The chart renders, lints and produces valid objects for every documented variant; the workload is hardened."""

import copy

import pytest

from tests.chart.support import NAMESPACE, VARIANTS, lint, lint_problems, render, validate_object
from tests.support import assert_valid_k8s
from webhook.cli import build_parser as _parser


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_lint_is_clean(variant):
    report = lint(VARIANTS[variant])
    assert report["total_charts_linted"] == 1
    assert lint_problems(report) == []


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_rendered_object_is_valid(variant):
    rendered = render(VARIANTS[variant])
    assert rendered.objects
    for obj in rendered.objects:
        validate_object(obj)
        if obj["metadata"].get("namespace") is not None:
            assert obj["metadata"]["namespace"] == NAMESPACE


def test_validation_would_catch_a_broken_object():
    """The checks above can fail: a misspelt field is refused, for core and third-party kinds alike."""
    deployment = copy.deepcopy(render().one("Deployment"))
    deployment["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["schema"] = "HTTPS"
    with pytest.raises(Exception):
        validate_object(deployment)
    monitor = copy.deepcopy(render(VARIANTS["service-monitor"]).one("ServiceMonitor"))
    monitor["spec"]["endpoints"][0]["tlsconfig"] = {}
    with pytest.raises(Exception):
        validate_object(monitor)


def test_default_objects():
    kinds = render().kinds()
    assert {"Deployment", "Service", "ServiceAccount", "ConfigMap", "PodDisruptionBudget", "ClusterRole",
            "ClusterRoleBinding", "Role", "RoleBinding", "Secret", "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration", "CustomResourceDefinition", "CronJob", "NetworkPolicy"} == kinds


def container(rendered=None):
    rendered = rendered or render()
    (main,) = rendered.one("Deployment")["spec"]["template"]["spec"]["containers"]
    return main


def test_deployment_is_highly_available():
    deployment = render().one("Deployment")
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    assert spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    anti = spec["template"]["spec"]["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
    assert anti["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert anti["podAffinityTerm"]["labelSelector"]["matchLabels"] == spec["selector"]["matchLabels"]
    hard = render({"podAntiAffinity": "hard"}).one("Deployment")["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    assert "requiredDuringSchedulingIgnoredDuringExecution" in hard
    pdb = render().one("PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1
    labels = spec["template"]["metadata"]["labels"]
    assert all(labels[k] == v for k, v in pdb["spec"]["selector"]["matchLabels"].items())
    assert "PodDisruptionBudget" not in render(VARIANTS["standalone"]).kinds()  # one replica: a PDB would block drains


def test_probes_and_resources():
    main = container()
    assert main["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "https", "scheme": "HTTPS"}
    assert main["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "https", "scheme": "HTTPS"}
    assert main["resources"]["requests"] and main["resources"]["limits"]
    assert set(main["resources"]["limits"]) >= {"cpu", "memory"}
    assert main["lifecycle"]["preStop"]["sleep"]["seconds"] > 0


def test_security_context():
    rendered = render()
    pod_spec = rendered.one("Deployment")["spec"]["template"]["spec"]
    assert pod_spec["securityContext"]["runAsNonRoot"] is True
    assert pod_spec["securityContext"]["runAsUser"] != 0
    assert pod_spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    security = container(rendered)["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    job = rendered.one("CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert job["securityContext"]["runAsNonRoot"] is True
    assert job["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True


def test_service_routes_to_the_container():
    rendered = render()
    service = rendered.one("Service")
    deployment = rendered.one("Deployment")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert all(labels[k] == v for k, v in service["spec"]["selector"].items())
    port_names = {p["name"] for p in container(rendered)["ports"]}
    assert service["spec"]["ports"][0]["targetPort"] in port_names
    assert service["spec"]["ports"][0]["port"] == 443


def test_mounts_policies_and_serving_files_but_not_the_ca_key():
    rendered = render()
    pod_spec = rendered.one("Deployment")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod_spec["volumes"]}
    mounts = {m["name"]: m for m in container(rendered)["volumeMounts"]}
    assert volumes["policies"]["configMap"]["name"] == rendered.one("ConfigMap")["metadata"]["name"]
    assert volumes["tls"]["secret"]["secretName"] == rendered.one("Secret")["metadata"]["name"]
    assert {i["key"] for i in volumes["tls"]["secret"]["items"]} == {"tls.crt", "tls.key", "ca.crt"}
    args = container(rendered)["args"]
    assert f"--policies={mounts['policies']['mountPath']}" in args
    assert f"--cert-dir={mounts['tls']['mountPath']}" in args
    assert "--in-cluster" in args and "--scan-interval=3600" in args and "--no-quota-backstop" not in args
    assert "--no-quota-backstop" in container(render({"live": {"quotaBackstop": False}}))["args"]
    assert not [a for a in container(render(VARIANTS["standalone"]))["args"] if a.startswith(("--in-cluster", "--scan"))]
    assert _parser().parse_args(args).in_cluster  # the webhook accepts the arguments the chart passes
    assert all(m.get("readOnly") for name, m in mounts.items() if name != "tmp")


def test_standalone_runs_without_api_access():
    rendered = render(VARIANTS["standalone"])
    assert rendered.one("Deployment")["spec"]["template"]["spec"]["automountServiceAccountToken"] is False
    assert rendered.one("ServiceAccount", "qm-quartermaster")["automountServiceAccountToken"] is False
    assert not [r for r in rendered.of_kind("ClusterRole") if r["metadata"]["name"] == "qm-quartermaster"]
    with pytest.raises(Exception, match="replicaCount"):
        render({"clusterState": "standalone"})  # two replicas would keep two different quota states


def test_bad_values_are_refused():
    for values, message in (({"clusterState": "hybrid"}, "clusterState"),
                            ({"certificates": {"mode": "vault"}}, "certificates.mode"),
                            ({"certificates": {"mode": "external"}}, "secretName"),
                            ({"policies": {"extra": {"../evil.yaml": "x: 1"}}}, "file name")):
        with pytest.raises(Exception, match=message):
            render(values)


def test_image_reference():
    assert container()["image"] == "ghcr.io/quartermaster-dev/quartermaster:0.1.0"
    digest = "sha256:" + "a" * 64
    pinned = container(render({"image": {"digest": digest, "tag": "ignored"}}))["image"]
    assert pinned == f"ghcr.io/quartermaster-dev/quartermaster@{digest}"
    assert_valid_k8s(render({"image": {"digest": digest}}).one("Deployment"))


def test_notes_say_how_to_get_out_of_trouble():
    notes = render().notes
    assert "kubectl delete mutatingwebhookconfiguration,validatingwebhookconfiguration qm-quartermaster" in notes
    assert "quartermaster.dev/admission=disabled" in notes
