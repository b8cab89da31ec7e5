"""`convert` of a ClusterPolicy matching namespaces by wildcard: a matchCondition on the request's namespace, and
the converted ValidatingPolicy admits and refuses exactly what the original does, namespace for namespace."""

from __future__ import annotations

import yaml

from tests.support import running_server, review
from webhook.families.kyverno.convert import convert_document

POLICY = {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "team-labels"},
          "spec": {"validationFailureAction": "Enforce", "background": False, "rules": [{
              "name": "needs-team", "match": {"any": [{"resources": {"kinds": ["Pod"],
                                                                     "namespaces": ["team-*", "lab-?", "jdoe"]}}]},
              "validate": {"message": "label team is required", "pattern": {"metadata": {"labels": {"team": "?*"}}}}}]}}
NAMESPACES = ["team-a", "team-", "teams", "lab-1", "lab-12", "jdoe", "jdoe2", "other"]


def pod(namespace: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": namespace},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}


def test_namespace_wildcards_become_a_match_condition():
    (converted,) = convert_document(POLICY).documents
    spec = converted["spec"]
    assert "namespaceSelector" not in spec["matchConstraints"]
    assert spec["matchConditions"] == [{"name": "kyverno-namespaces", "expression":
                                        'request.namespace in ["jdoe"] || request.namespace.matches("^lab-.$") || '
                                        'request.namespace.matches("^team-.*$")'}]


async def test_the_converted_policy_decides_as_the_original_in_every_namespace(tmp_path):
    (converted,) = convert_document(POLICY).documents
    answers = {}
    for name, document in (("original", POLICY), ("converted", converted)):
        policies = tmp_path / name / "policies"
        policies.mkdir(parents=True)
        (policies / "policy.yaml").write_text(yaml.safe_dump(document))
        async with running_server(policies, tmp_path / name) as server:
            answers[name] = {ns: (await server.admit("/validate", review(pod(ns), namespace=ns)))["allowed"]
                             for ns in NAMESPACES}
    assert answers["original"] == answers["converted"]
    refused = {ns for ns, allowed in answers["original"].items() if not allowed}
    assert refused == {"team-a", "team-", "lab-1", "jdoe"}
    # the conversion left its input alone
    assert POLICY["spec"]["rules"][0]["match"]["any"][0]["resources"]["namespaces"] == ["team-*", "lab-?", "jdoe"]
