"""YAML inside a request (an annotation a policy parses with CEL's yaml.parse or JMESPath's parse_yaml) is
read with the alias and nesting bounds: 200 bytes of aliases held the event loop for minutes and took 10 GB."""

import asyncio

import pytest

from tests.kinds import pod
from tests.model.test_boundedyaml import BOMB
from tests.support import policy_dir, review, running_server

PARSE_IN_CEL = """\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: parse-cel
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  validations:
  - expression: "!('cfg' in object.metadata.?annotations.orValue({})) || yaml.parse(object.metadata.annotations['cfg']) != null"
    message: cfg must be YAML
"""

PARSE_IN_JMESPATH = """\
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: parse-jmespath
spec:
  validationFailureAction: Enforce
  rules:
  - name: cfg
    match:
      any:
      - resources:
          kinds: [Pod]
    preconditions:
      all:
      - key: "{{ request.object.metadata.annotations.cfg2 || '' }}"
        operator: NotEquals
        value: ""
    validate:
      message: cfg2 must be YAML
      deny:
        conditions:
          any:
          - key: "{{ parse_yaml(request.object.metadata.annotations.cfg2) | length(@) }}"
            operator: Equals
            value: 0
"""


def annotated(key: str, value: str) -> dict:
    obj = pod()
    obj["metadata"]["annotations"] = {key: value}
    return obj


@pytest.mark.parametrize("key", ["cfg", "cfg2"])
@pytest.mark.parametrize("text, reason", [(BOMB, "excessive aliasing"), ("&a [*a]", "recursive data"),
                                          ("[" * 5000 + "]" * 5000, "nesting")])
async def test_yaml_bombs_in_a_request_are_policy_errors_answered_at_once(tmp_path, key, text, reason):
    policies = policy_dir(tmp_path / "policies", {"cel.yaml": PARSE_IN_CEL, "jmespath.yaml": PARSE_IN_JMESPATH})
    async with running_server(policies, tmp_path) as server:
        assert (await server.admit("/validate", review(annotated(key, "a: 1"))))["allowed"] is True
        # a hang guard; that the bomb is refused from its node graph, in linear work, is proven by the error
        # below and by tests/model/test_boundedyaml.py
        response = await asyncio.wait_for(server.admit("/validate", review(annotated(key, text))), 60)
        # the policy could not be evaluated: its failure policy (Fail) denies
        assert response["allowed"] is False, response
        if reason != "nesting":  # libyaml's own words for it differ by depth
            assert reason in response["status"]["message"] or key == "cfg", response["status"]["message"]
        assert (await server.get("/healthz"))[0] == 200
