"""Issue 39, finding 4: one CEL expression stalled every admission. Each stall as a tenant sends it, through the
real server: the evaluation is stopped by its cost budget (Kubernetes' per-call limit) or by the request's
deadline, and the policy's failure policy (Fail) answers with a message naming the limit. No clock is read."""

import json

import pytest

from tests.cel.test_cost import hostile_env_pod
from tests.cel.test_nul_admission import _POLICY as POD_POLICY
from tests.server.test_hostile_policies import annotated
from tests.support import policy_dir, review, running_server
from webhook.model.review import parse_review



def policy(name: str, expression: str, message: str) -> str:
    return POD_POLICY.format(name=name) + f"""\
  validations:
  - expression: >-
      {expression}
    message: {message}
"""


UNIQUE_ENV = policy("unique-env-names", "object.spec.containers.all(c, !has(c.env) || "
                    "c.env.map(e, e.name).distinct().size() == c.env.size())", "env names must be unique")
UNIQUE_FINALIZERS = policy("unique-finalizers", "!has(object.metadata.finalizers) || "
                           "object.metadata.finalizers.distinct().size() == object.metadata.finalizers.size()",
                           "finalizers must be unique")
_NOTE = "!has(object.metadata.annotations) || !('note' in object.metadata.annotations) || object.metadata.annotations.note"
FEW_CAPITALS = policy("few-capitals", f"{_NOTE}.findAll('[A-Z]').size() < 1000", "the note shouts")
ESCAPED = policy("escaped-note", f"{_NOTE}.replace('x', 'xxxxxxxx').replace('x', 'xxxxxxxx').size() < 4000000",
                 "the note is too long once escaped")


def finalized(count: int) -> dict:
    pod = hostile_env_pod(1, 1)
    pod["metadata"]["finalizers"] = [f"example.com/finalizer-{i}" for i in range(count)]
    return pod


def denied_by_cost(response: dict, policy: str) -> str:
    assert response["allowed"] is False, response
    message = response["status"]["message"]
    assert policy in message, message
    assert "cost limit exceeded" in message or "more than the limit" in message, message
    return message


async def test_env_names_must_be_unique_on_a_281_kb_pod_is_refused_by_cost(tmp_path):
    """3.7 s per evaluation on the event loop, beyond the chart's 5 s timeout with four in flight."""
    policies = policy_dir(tmp_path / "policies", {"env.yaml": UNIQUE_ENV})
    async with running_server(policies, tmp_path) as server:
        assert (await server.admit("/validate", review(hostile_env_pod(2, 30))))["allowed"] is True
        duplicated = hostile_env_pod(1, 3)
        duplicated["spec"]["containers"][0]["env"][2]["name"] = duplicated["spec"]["containers"][0]["env"][0]["name"]
        assert "env names must be unique" in (await server.admit("/validate", review(duplicated)))["status"]["message"]
        hostile = hostile_env_pod(4, 1000)
        assert 270_000 < len(json.dumps(hostile, separators=(',', ':'))) < 290_000
        message = denied_by_cost(await server.admit("/validate", review(hostile)), "unique-env-names")
        assert "distinct" in message


async def test_distinct_over_a_requests_list_is_refused_when_the_policy_loads(tmp_path):
    """distinct() over 8,000 items held the event loop for 60 s. Over a list of the request it is refused when the
    policy is compiled (its estimate is beyond Kubernetes' limit for one expression), as the API server refuses
    such a rule: the policy's failure policy answers, naming the estimate, and the stall never starts."""
    policies = policy_dir(tmp_path / "policies", {"fin.yaml": UNIQUE_FINALIZERS})
    async with running_server(policies, tmp_path) as server:
        response = await server.admit("/validate", review(finalized(8000)))
        assert response["allowed"] is False
        message = response["status"]["message"]
        assert "unique-finalizers" in message and "estimated cost" in message and "most of it: distinct()" in message


@pytest.mark.parametrize("policy_text, fine, hostile, stopped", [
    # findAll on 1 MB took 40 s building a match list: each match is charged before it is kept
    (FEW_CAPITALS, "Hello World", "A" * 1_000_000, "findAll"),
    # replace twice on a 100 kB annotation built 380 MB before its size was looked at
    (ESCAPED, "xx", "x" * 100_000, "replace: the result would hold"),
])
async def test_string_functions_on_a_large_annotation_are_refused_by_cost(tmp_path, policy_text, fine, hostile, stopped):
    policies = policy_dir(tmp_path / "policies", {"p.yaml": policy_text})
    name = policy_text.split("name: ", 1)[1].split("\n", 1)[0]
    async with running_server(policies, tmp_path) as server:
        assert (await server.admit("/validate", review(annotated(fine))))["allowed"] is True
        assert stopped in denied_by_cost(await server.admit("/validate", review(annotated(hostile))), name)


async def test_an_evaluation_past_the_requests_deadline_is_stopped(tmp_path):
    """The request's ?timeout= bounds the whole evaluation: past its deadline the next library call ends it, and
    the failure policy decides. (A budget of nothing: the deadline has passed when the evaluation starts.)"""
    policies = policy_dir(tmp_path / "policies", {"env.yaml": UNIQUE_ENV})
    async with running_server(policies, tmp_path) as server:
        request = parse_review(json.dumps(review(hostile_env_pod(2, 30))))
        assert (await server.qm.engine.validate(request, 9.0)).allowed is True
        verdict = await server.qm.engine.validate(request, 0.0)
        assert verdict.allowed is False and "deadline (its ?timeout=) passed" in verdict.message, verdict
