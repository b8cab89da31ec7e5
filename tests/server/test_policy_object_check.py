"""/validate-policy: a policy object that would not load is refused as it is applied, with the field and the
reason, through the real HTTPS server; one that loads, and anything that is no policy, passes."""

import pytest
import yaml

from tests.support import REPO, policy_dir, review, running_server

CLUSTER_POLICY = {
    "apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "require-team"},
    "spec": {"validationFailureAction": "Enforce", "rules": [{
        "name": "team", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
        "validate": {"message": "add the label team", "pattern": {"metadata": {"labels": {"team": "?*"}}}}}]},
}
VALIDATING_POLICY = {
    "apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": {"name": "no-latest"},
    "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                     "operations": ["CREATE"], "resources": ["pods"]}]},
             "validations": [{"expression": "object.spec.containers.all(c, !c.image.endsWith(':latest'))"}]},
}
PROFILE_QUOTA = yaml.safe_load((REPO / "policies" / "profile-quota.yaml").read_text())  # the one the chart ships


def _with(doc, path, value):
    import copy

    changed = copy.deepcopy(doc)
    node = changed
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return changed


@pytest.fixture
def policies(tmp_path):
    return policy_dir(tmp_path / "policies", {})


async def test_policies_that_load_pass_and_those_that_would_not_are_refused_with_their_field(policies, tmp_path):
    async with running_server(policies, tmp_path) as server:
        for good in (CLUSTER_POLICY, VALIDATING_POLICY):
            answer = await server.admit("/validate-policy", review(good))
            assert answer["allowed"] is True, answer

        unknown_field = _with(CLUSTER_POLICY, ["spec", "rules", 0, "validate", "patern"], {})
        answer = await server.admit("/validate-policy", review(unknown_field))
        assert answer["allowed"] is False and answer["status"]["code"] == 422
        message = answer["status"]["message"]
        assert message.startswith("ClusterPolicy/require-team (cluster object) would not load: ")
        assert "spec.rules[0].validate" in message and "patern" in message

        bad_cel = _with(VALIDATING_POLICY, ["spec", "validations", 0, "expression"], "object.spec.containers.all(c,")
        answer = await server.admit("/validate-policy", review(bad_cel, operation="UPDATE", old=VALIDATING_POLICY))
        assert answer["allowed"] is False
        assert answer["status"]["message"].startswith(
            "ValidatingPolicy/no-latest (cluster object) would not load: spec.validations[0].expression: does not "
            "compile: ")


async def test_a_platform_kind_is_checked_against_its_schema_and_its_compile(policies, tmp_path):
    async with running_server(policies, tmp_path) as server:
        assert (await server.admit("/validate-policy", review(PROFILE_QUOTA)))["allowed"] is True
        answer = await server.admit("/validate-policy",
                                    review(_with(PROFILE_QUOTA, ["spec", "classes", "personal", "gpus"], -1)))
        assert answer["allowed"] is False and "spec.classes.personal.gpus" in answer["status"]["message"], answer


async def test_what_is_no_policy_and_deletions_pass_untouched(policies, tmp_path):
    async with running_server(policies, tmp_path) as server:
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
               "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        assert (await server.admit("/validate-policy", review(pod)))["allowed"] is True
        broken = _with(CLUSTER_POLICY, ["spec", "rules"], "not a list")
        answer = await server.admit("/validate-policy", review(None, operation="DELETE", old=broken))
        assert answer["allowed"] is True  # a broken policy must stay deletable
