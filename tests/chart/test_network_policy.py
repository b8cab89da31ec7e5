"""The chart's NetworkPolicy, rendered by the real Helm engine: only the API server reaches the webhook port."""

import ipaddress

import pytest

from tests.chart.support import VARIANTS, render, validate_object


def test_off_by_default_and_refused_without_cidrs():
    assert "NetworkPolicy" not in render().kinds()
    with pytest.raises(Exception, match="networkPolicy.apiServerCIDRs"):
        render({"networkPolicy": {"enabled": True}})


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
    assert extra == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]


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
