"""The engine over policy families: phases, compile errors, the CEL activation, subresources,
background scans, generated objects and the one offline admission path."""

import io
import json
from pathlib import Path

import yaml

from webhook.app import Quartermaster, Settings
from webhook.apply import run_apply
from webhook.apply_output import write_documents
from webhook.engine.offline import admit_offline
from webhook.engine.scan import scan
from webhook.model.results import Outcome
from webhook.model.review import parse_review
from webhook.policy.family import FamilyRegistry
from webhook.reports.sink import MemoryResultSink
from webhook.state.memory import InMemoryClusterState
from tests.families.gate import GateFamily, gate
from tests.kinds import REQUIRE_TEAM, pod, test_family
from tests.support import review

CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "made", "namespace": "jdoe"},
              "data": {"k": "v"}}


def build(tmp_path: Path, *texts: str) -> Quartermaster:
    directory = tmp_path / "policies"
    directory.mkdir(parents=True, exist_ok=True)
    for i, text in enumerate(texts):
        (directory / f"{i}.yaml").write_text(text)
    state = InMemoryClusterState([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "jdoe", "labels": {"x": "y"}}}])
    registry = FamilyRegistry([test_family(), GateFamily()])
    qm = Quartermaster.build(Settings(policies=directory), state=state, registry=registry)
    qm.load_policies()
    return qm


def request(obj, **kw):
    body = review(obj, **kw)
    return parse_review(json.dumps(body).encode())


async def test_a_policy_that_does_not_compile_follows_its_failure_policy(tmp_path):
    qm = build(tmp_path, gate("broken", "object.("))
    verdict = await qm.engine.validate(request(pod("a")))
    assert not verdict.allowed and "Gate/broken does not compile" in verdict.message
    (result,) = verdict.results
    assert result.outcome is Outcome.ERROR and result.rule == "compile"
    lenient = build(tmp_path / "x", gate("broken", "object.(", {"failurePolicy": "Ignore"}))
    verdict = await lenient.engine.validate(request(pod("a")))
    assert verdict.allowed and any("does not compile" in w for w in verdict.warnings)


async def test_a_policy_in_both_phases_runs_in_both(tmp_path):
    qm = build(tmp_path, gate("both", "object.metadata.labels.gated == 'yes'", mutate=True))
    mutated = await qm.engine.mutate(request(pod("a")))
    assert mutated.object["metadata"]["labels"]["gated"] == "yes"
    assert not (await qm.engine.validate(request(pod("b")))).allowed  # not mutated: the check fails
    result = await admit_offline(qm.engine, pod("c"))
    assert result.allowed and [(r.policy.name, r.rule) for r in result.results] == [("both", "label"), ("both", "check")]
    assert result.patch and qm.state.get("Pod", "jdoe", "c")["metadata"]["labels"]["gated"] == "yes"


async def test_the_activation_is_kubernetes_shaped_and_built_once(tmp_path):
    qm = build(tmp_path, gate("one", "true"), gate("two", "true"))
    body = review(pod("a"), username="jdoe@example.org")
    body["request"]["userInfo"].update(uid="u-1", extra={"scopes": ["a", "b"]})
    assert (await qm.engine.validate(parse_review(json.dumps(body).encode()))).allowed
    first, second = (p.seen[-1] for p in qm.store.snapshot.policies)
    assert first["request"] is second["request"]  # one `request` variable per admission request
    req = first["request"]
    assert req["kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert req["resource"] == {"group": "", "version": "v1", "resource": "pods"} == req["requestResource"]
    assert req["requestKind"] == req["kind"] and req["subResource"] == "" and req["operation"] == "CREATE"
    assert req["userInfo"] == {"username": "jdoe@example.org", "groups": ["system:authenticated"], "uid": "u-1",
                               "extra": {"scopes": ["a", "b"]}}
    assert req["options"] == {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
    assert first["namespaceObject"]["metadata"]["name"] == "jdoe" and first["object"]["metadata"]["name"] == "a"
    assert first["oldObject"] is None


async def test_cluster_scoped_requests_have_no_namespace_object(tmp_path):
    qm = build(tmp_path, gate("ns", "namespaceObject == null", kinds=["Namespace"]))
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "new"}}
    assert (await qm.engine.validate(request(namespace))).allowed


async def test_subresources_are_for_the_family_s_matcher_to_decide(tmp_path):
    qm = build(tmp_path, REQUIRE_TEAM, gate("status", "false", subresources=True))
    body = review(pod("a"))  # a CREATE of pods/eviction: RequireLabel would fail the pod if it matched
    body["request"]["subResource"] = "eviction"
    verdict = await qm.engine.validate(parse_review(json.dumps(body).encode()))
    # the batteries' matcher (RequireLabel's MatchSpec) refuses subresources; the Gate takes them
    assert [(r.policy.name, r.outcome) for r in verdict.results] == [("status", Outcome.FAIL)]


async def test_background_scans_skip_admission_only_policies(tmp_path):
    qm = build(tmp_path, gate("scanned", "false"), gate("admission-only", "false", background=False))
    qm.state.record_admitted(pod("a"), "CREATE")
    sink = MemoryResultSink()
    summary = await scan(qm.store, qm.state, sink, kinds=("Pod",))
    assert summary.resources == 1 and [e.result.policy.name for e in sink.entries] == ["scanned"]


async def test_generated_objects_are_created_after_admission_only(tmp_path):
    qm = build(tmp_path, gate("gen", "object.metadata.name != 'deny-me'", generates=[CONFIG_MAP]))
    dry = await admit_offline(qm.engine, pod("a"), dry_run=True)
    assert dry.allowed and dry.generated == () and qm.state.get("ConfigMap", "jdoe", "made") is None
    denied = await admit_offline(qm.engine, pod("deny-me"))
    assert not denied.allowed and denied.generated == () and qm.state.get("ConfigMap", "jdoe", "made") is None
    admitted = await admit_offline(qm.engine, pod("a"))
    assert admitted.allowed and [g["metadata"]["name"] for g in admitted.generated] == ["made"]
    assert qm.state.get("ConfigMap", "jdoe", "made")["data"] == {"k": "v"}


async def test_warn_results_warn_and_never_block(tmp_path):
    qm = build(tmp_path, gate("soft", "false", warnOnly=True))
    verdict = await qm.engine.validate(request(pod("a")))
    assert verdict.allowed and verdict.warnings == ("soft: soft says no",)
    assert verdict.audit_annotations == {"soft.check": "soft says no"}


async def test_apply_prints_generated_objects(tmp_path):
    qm = build(tmp_path, gate("gen", "true", generates=[CONFIG_MAP]))
    report = await run_apply(qm, [pod("a")])
    out = io.StringIO()
    write_documents(report, out)
    docs = list(yaml.safe_load_all(out.getvalue()))
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [("Pod", "a"), ("ConfigMap", "made")]


async def test_the_request_variable_keeps_what_the_api_server_converted(tmp_path):
    qm = build(tmp_path, gate("one", "true", kinds=["Deployment"]))
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "jdoe"}}
    body = review(deployment)
    body["request"]["requestKind"] = {"group": "apps", "version": "v1beta2", "kind": "Deployment"}
    body["request"]["requestResource"] = {"group": "apps", "version": "v1beta2", "resource": "deployments"}
    assert (await qm.engine.validate(parse_review(json.dumps(body).encode()))).allowed
    req = qm.store.snapshot.policies[0].seen[-1]["request"]
    assert req["resource"] == {"group": "apps", "version": "v1", "resource": "deployments"}
    assert req["requestResource"]["version"] == "v1beta2" and req["requestKind"]["version"] == "v1beta2"


async def test_standalone_scans_cover_every_kind_in_the_state(tmp_path):
    qm = build(tmp_path, gate("maps", "false", kinds=["ConfigMap"]))
    qm.state.record_admitted(CONFIG_MAP, "CREATE")
    sink = MemoryResultSink()
    await scan(qm.store, qm.state, sink)
    assert [(e.resource.kind, e.result.outcome) for e in sink.entries] == [("ConfigMap", Outcome.FAIL)]
