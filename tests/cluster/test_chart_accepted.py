"""Every object the chart renders, in each documented variant, is accepted by the real API server (server-side dry
run: schema, defaulting, validation and admission, nothing stored). Kinds of operators that are not installed here
(cert-manager, prometheus-operator) are checked offline by tests/chart; this test says which it left out."""

from __future__ import annotations

import json

import pytest

from tests.chart.support import VARIANTS, render
from tests.cluster.kube import Kube
from tests.cluster.quartermaster import Installation

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("cluster")]

THIRD_PARTY_GROUPS = ("cert-manager.io", "monitoring.coreos.com")
RELEASE, NAMESPACE = "chartcheck", "chartcheck"


@pytest.fixture(scope="module")
def release_namespace(admin: Kube) -> str:
    if admin.get("v1", "Namespace", NAMESPACE) is None:
        admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    return NAMESPACE


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_rendered_object_is_accepted_by_the_api_server(admin: Kube, quartermaster: Installation,
                                                             release_namespace: str, variant: str) -> None:
    rendered = render(VARIANTS[variant], namespace=release_namespace, release=RELEASE)
    ours = [o for o in rendered.objects if o["apiVersion"].split("/")[0] not in THIRD_PARTY_GROUPS]
    assert ours, "nothing rendered"
    result = admin.kubectl("apply", "--dry-run=server", "-o", "json", "-f", "-",
                           stdin="\n".join(json.dumps(o) for o in ours), check=False)
    assert result.returncode == 0, f"the API server refused what the chart renders ({variant}):\n{result.stderr}"
    accepted = json.loads(result.stdout)
    items = accepted["items"] if accepted.get("kind") == "List" else [accepted]
    assert sorted((o["kind"], o["metadata"]["name"]) for o in items) == \
        sorted((o["kind"], o["metadata"]["name"]) for o in ours)
