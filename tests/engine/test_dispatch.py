"""The engine on its own: recording into standalone state, dry run, rollbacks, match rules."""

from pathlib import Path

from webhook.app import Quartermaster, Settings
from webhook.model.review import parse_review
from webhook.state.memory import InMemoryClusterState
from tests.kinds import ADD_ZONE, REQUIRE_TEAM, pod, test_registry
from tests.support import review
import json


def build(tmp_path: Path, *texts: str) -> Quartermaster:
    directory = tmp_path / "policies"
    directory.mkdir(parents=True, exist_ok=True)
    for i, text in enumerate(texts):
        (directory / f"{i}.yaml").write_text(text)
    qm = Quartermaster.build(Settings(policies=directory), state=InMemoryClusterState(), registry=test_registry())
    qm.load_policies()
    return qm


def request(obj, **kw):
    return parse_review(json.dumps(review(obj, **kw)).encode())


async def test_admitted_create_is_recorded_and_delete_removes(tmp_path):
    qm = build(tmp_path, REQUIRE_TEAM)
    assert (await qm.engine.validate(request(pod("a", labels={"team": "x"})))).allowed
    assert qm.state.get("Pod", "jdoe", "a") is not None
    assert not (await qm.engine.validate(request(pod("b")))).allowed
    assert qm.state.get("Pod", "jdoe", "b") is None
    assert (await qm.engine.validate(request(None, operation="DELETE", old=pod("a"), namespace="jdoe"))).allowed
    assert qm.state.get("Pod", "jdoe", "a") is None


async def test_recorded_object_says_what_the_request_did_and_is_the_states_own(tmp_path):
    """The stored object carries the request's namespace and name, and its kind and apiVersion, when the object
    left them out; either way the state keeps its own copies of the object and its metadata, never the request's."""
    qm = build(tmp_path, REQUIRE_TEAM)
    bare = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}, "metadata": {"labels": {"team": "x"}}}
    complete = pod("b", labels={"team": "x"})
    for name, obj in (("a", bare), ("b", complete)):
        doc = review(obj, namespace="jdoe")
        doc["request"]["name"] = name
        admitted = parse_review(json.dumps(doc).encode())
        sent = json.loads(json.dumps(admitted.object))
        assert (await qm.engine.validate(admitted)).allowed
        stored = qm.state.get("Pod", "jdoe", name)
        assert stored is not None and stored is not admitted.object
        assert stored["metadata"] is not admitted.object["metadata"]
        assert admitted.object == sent  # the request's object is left as it came
        assert (stored["kind"], stored["apiVersion"]) == ("Pod", "v1")
        assert (stored["metadata"]["namespace"], stored["metadata"]["name"]) == ("jdoe", name)
        assert stored["metadata"]["labels"] == {"team": "x"} and stored["spec"] == sent["spec"]
        assert stored["metadata"]["uid"] and stored["metadata"]["resourceVersion"]


async def test_dry_run_is_not_recorded(tmp_path):
    qm = build(tmp_path, REQUIRE_TEAM)
    assert (await qm.engine.validate(request(pod("a", labels={"team": "x"}), dry_run=True))).allowed
    assert qm.state.get("Pod", "jdoe", "a") is None


async def test_namespace_selector_and_conditions(tmp_path):
    scoped = REQUIRE_TEAM + ("  namespaceSelector:\n    matchLabels: {tier: gold}\n"
                             "  matchConditions:\n  - name: not-system\n    expression: \"!object.metadata.name.startsWith('sys-')\"\n")
    qm = build(tmp_path, scoped)
    qm.state.record_admitted({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gold", "labels": {"tier": "gold"}}}, "CREATE")
    assert (await qm.engine.validate(request(pod("a", namespace="jdoe")))).allowed  # namespace not selected
    assert not (await qm.engine.validate(request(pod("a", namespace="gold")))).allowed
    assert (await qm.engine.validate(request(pod("sys-a", namespace="gold")))).allowed  # condition false


async def test_condition_error_follows_failure_policy(tmp_path):
    broken = REQUIRE_TEAM + "  matchConditions:\n  - name: err\n    expression: \"object.spec.nothing.here == 1\"\n"
    qm = build(tmp_path, broken)
    verdict = await qm.engine.validate(request(pod("a", labels={"team": "x"})))
    assert not verdict.allowed and "could not be evaluated" in verdict.message
    qm2 = build(tmp_path / "x", broken + "  failurePolicy: Ignore\n")
    verdict = await qm2.engine.validate(request(pod("a")))
    assert verdict.allowed and verdict.warnings


async def test_mutation_is_a_patch_of_the_original(tmp_path):
    qm = build(tmp_path, ADD_ZONE)
    original = pod("a")
    result = await qm.engine.mutate(request(original))
    assert result.verdict.allowed and result.object["metadata"]["labels"]["example.org/zone~a"] == "b"
    assert original["metadata"]["labels"] == {}  # the request's object is never modified
    again = await qm.engine.mutate(request(result.object))
    assert again.verdict.patch == ()  # reinvocation on the mutated object is a no-op
