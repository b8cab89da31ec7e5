"""The chart's NetworkPolicy, rendered by the real Helm engine: only the API server reaches the webhook port."""

import ipaddress

import pytest

from tests.chart.support import VARIANTS, render, validate_object


KUBE_SYSTEM = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}


def test_on_by_default_so_that_pods_cannot_post_reviews():
    """The chart's defaults: a pod of the cluster (a tenant's) is not a peer of the webhook port. Offline (no
    `kubernetes` EndpointSlices to read) only kube-system's pods get in, which is where GKE's and AKS's
    Konnectivity agents carry the API server's calls from; the NOTES say to set the API server's CIDRs."""
    rendered = render()
    policy = rendered.one("NetworkPolicy")
    validate_object(policy)
    (rule,) = policy["spec"]["ingress"]
    assert rule["from"] == [KUBE_SYSTEM]  # never a rule without `from`: that would admit every source
    assert policy["metadata"]["annotations"]["quartermaster.dev/api-server-sources"] == "unresolved"
    assert "networkPolicy.apiServerCIDRs" in rendered.notes


def test_no_peer_at_all_admits_nothing_rather_than_everything():
    policy = render({"networkPolicy": {"allowKubeSystem": False}}).one("NetworkPolicy")
    validate_object(policy)
    assert policy["spec"]["ingress"] == [] and policy["spec"]["policyTypes"] == ["Ingress"]


def test_switched_off_the_notes_say_the_port_is_open():
    rendered = render({"networkPolicy": {"enabled": False}})
    assert "NetworkPolicy" not in rendered.kinds()
    assert "answers any pod of the cluster" in rendered.notes


@pytest.mark.parametrize("cidr", ["10.0.0.1", "control-plane", "10.0.0.0/24 ", "fd00::"])
def test_a_value_that_is_not_a_cidr_is_refused_by_name(cidr):
    with pytest.raises(Exception, match=r"networkPolicy.apiServerCIDRs\[1\]: .* is not a CIDR"):
        render({"networkPolicy": {"apiServerCIDRs": ["10.0.0.0/24", cidr]}})


def _selects(selector, labels):
    return all(labels.get(k) == v for k, v in selector["matchLabels"].items())


def test_admits_only_the_api_server_on_the_webhook_port():
    rendered = render(VARIANTS["network-policy"])
    policy = rendered.one("NetworkPolicy")
    validate_object(policy)
    spec = policy["spec"]
    pod_labels = rendered.one("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert _selects(spec["podSelector"], pod_labels)
    assert spec["policyTypes"] == ["Ingress"]
    (rule,) = spec["ingress"]  # one rule: no other port or peer is open
    assert rule["ports"] == [{"port": "https", "protocol": "TCP"}]
    container = rendered.one("Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert [p["name"] for p in container["ports"]] == ["https"]  # the named port is the webhook's
    blocks = [peer["ipBlock"]["cidr"] for peer in rule["from"] if "ipBlock" in peer]
    assert blocks == ["10.0.0.0/24", "fd00::/64"] and all(ipaddress.ip_network(b) for b in blocks)
    assert not any("podSelector" in peer and "namespaceSelector" not in peer for peer in rule["from"])
    extra = [peer for peer in rule["from"] if "namespaceSelector" in peer]
    assert extra == [KUBE_SYSTEM, {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    assert policy["metadata"]["annotations"]["quartermaster.dev/api-server-sources"] == "values"
    assert "networkPolicy.apiServerCIDRs" not in render(VARIANTS["network-policy"]).notes


def test_client_auth_mounts_the_ca_and_passes_it_to_serve():
    from webhook.cli import build_parser

    deployment = render(VARIANTS["client-auth"]).one("Deployment")
    validate_object(deployment)
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    args = build_parser().parse_args(container["args"])
    assert str(args.client_ca) == "/etc/quartermaster/client-ca/ca.crt"
    mount = next(m for m in container["volumeMounts"] if m["name"] == "client-ca")
    volume = next(v for v in pod["volumes"] if v["name"] == "client-ca")
    assert mount["mountPath"] == "/etc/quartermaster/client-ca" and mount["readOnly"] is True
    assert volume["configMap"] == {"name": "apiserver-client-ca", "items": [{"key": "ca.crt", "path": "ca.crt"}]}
    plain = render().one("Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert not any(a.startswith("--client-ca") for a in plain["args"])
