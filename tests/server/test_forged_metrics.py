"""Reviews posted straight to the webhook port by someone other than the API server (the port answers
whoever reaches it unless the NetworkPolicy or --client-ca keeps them off) cannot grow /metrics: made-up
kinds and namespaces share the label value `other`, whatever their number."""

from prometheus_client.parser import text_string_to_metric_families

from tests.kinds import pod
from tests.support import policy_dir, review, running_server
from webhook.observability.labels import OTHER

FORGED = 150  # each one a new kind and a new namespace: as many new series each, before the bound
ANY_KIND = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: any-kind
spec:
  validationActions: [Audit]
  matchConstraints:
    resourceRules:
      - apiGroups: ["*"]
        apiVersions: ["*"]
        operations: [CREATE]
        resources: ["*"]
  validations:
    - expression: "true"
"""
NAMESPACE = """\
apiVersion: v1
kind: Namespace
metadata:
  name: jdoe
"""


def _series(text: str) -> dict[str, list[dict[str, str]]]:
    found: dict[str, list[dict[str, str]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in ("quartermaster_admission_requests_total", "quartermaster_policy_results_total"):
                found.setdefault(sample.name, []).append(sample.labels)
    return found


async def test_made_up_kinds_and_namespaces_add_no_series(tmp_path):
    policies = policy_dir(tmp_path / "policies", {"any-kind.yaml": ANY_KIND})  # a result for every kind
    state = tmp_path / "state"
    state.mkdir()
    (state / "namespace.yaml").write_text(NAMESPACE)
    async with running_server(policies, tmp_path, state=state) as server:
        await server.admit("/validate", review(pod(namespace="jdoe", labels={"team": "a"})))
        for n in range(FORGED):
            made_up = {"apiVersion": "evil.example/v1", "kind": f"Junk{n}",
                       "metadata": {"name": f"j{n}", "namespace": "jdoe", "labels": {"team": "a"}}}
            assert (await server.admit("/validate", review(made_up)))["allowed"]
            assert (await server.admit("/validate", review(pod(f"p{n}", namespace=f"nowhere-{n}",
                                                                labels={"team": "a"}))))["allowed"]
        series = _series((await server.get("/metrics"))[1])
    admissions = series["quartermaster_admission_requests_total"]
    results = series["quartermaster_policy_results_total"]
    assert {s["kind"] for s in admissions} == {"Pod", OTHER}
    assert {(s["resource_kind"], s["resource_namespace"]) for s in results} == {("Pod", "jdoe"), (OTHER, "jdoe"),
                                                                                ("Pod", OTHER)}
    assert len(admissions) == 2 and len(results) == 3  # not 2 * FORGED
