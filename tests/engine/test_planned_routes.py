"""The engine over the CEL family's planned routes (webhook.families.cel.plan): each policy is asked in its turn,
and what its route answers must be what the reference route gives, in the same order among the other policies'
results, whether the engine admits, updates or scans."""

import json

import pytest
import yaml

from tests.families.cel.test_fused import CEL, CORPUS, NAMESPACES, engine, pod, results
from tests.families.cel.test_fused_corpus import _corpus_documents
from tests.families.cel.test_fused_group import GROUP
from webhook.engine.dispatch import AdmissionEngine
from webhook.engine.offline import admit_offline
from webhook.families.cel.family import CelFamily
from webhook.families.cel.route import Route
from webhook.policy.documents import Document
from webhook.policy.family import CelEvaluation, CompileEnv
from webhook.policy.snapshot import PolicySnapshot, PolicyStore
from webhook.state.memory import InMemoryClusterState


def _outcome(checked):
    return checked.allowed, checked.message, checked.results, checked.warnings, checked.code


async def test_group_members_answer_from_the_groups_prebuilt_outcomes():
    eng = engine(GROUP)
    assert {p.traits.route for p in eng.store.snapshot.policies} == {Route.GROUP.value}
    checked = await admit_offline(eng, pod(labels={"team": "a"}, hostNetwork=True))
    assert results(checked) == [("fail", "no host network"), ("pass", "success"), ("pass", "success"),
                                ("pass", "success")]
    # a failure whose message is a messageExpression is the member's own to build, on the reference route
    checked = await admit_offline(eng, pod(labels={"team": "a"}, hostPID=True))
    assert results(checked) == [("pass", "success"), ("pass", "success"), ("fail", "host PID on p"),
                                ("pass", "success")]


async def test_a_background_scan_asks_each_member_that_takes_part():
    eng = engine(GROUP)
    checked = await admit_offline(eng, pod(labels={"team": "a"}), background=True, dry_run=True)
    assert [r.policy.name for r in checked.results] == ["host-network", "labelled", "message"]  # not scan-only
    assert results(checked) == [("pass", "success")] * 3


async def test_members_the_request_does_not_match_give_no_result():
    eng = engine(GROUP)
    checked = await admit_offline(eng, None, old=pod(labels={"team": "a"}), operation="DELETE")  # CREATE only
    assert checked.allowed and checked.results == ()


@pytest.mark.skipif(CORPUS is None, reason="the shared conformance corpus is not beside this checkout")
async def test_planned_and_reference_routes_agree_on_every_corpus_resource():
    """The corpus' ValidatingPolicies with GROUP's and a non-member between them; each resource created, updated
    and scanned: the same verdict, results (in order), warnings on the planned routes and on the reference one."""
    docs = [Document("p.yaml", i, d, None) for i, d in enumerate(yaml.safe_load_all(GROUP))]
    docs += [Document(str(path), i, d, None) for path, i, d in _corpus_documents()[0]]
    engines = []
    for evaluation in CelEvaluation:
        compiled = CelFamily().compile(docs, CompileEnv(CEL, cel_evaluation=evaluation)).policies
        store = PolicyStore()
        store.publish(PolicySnapshot.of(compiled, 1))
        engines.append(AdmissionEngine(store, InMemoryClusterState(NAMESPACES)))
    planned, reference = engines
    routes = [p.traits.route for p in planned.store.snapshot.policies]
    assert routes.count(Route.GROUP.value) > 50 and routes.count(Route.REFERENCE.value) > 0  # mixed
    assert {p.traits.route for p in reference.store.snapshot.policies} == {Route.REFERENCE.value}
    _, resources = _corpus_documents()
    unique = list({json.dumps(r, sort_keys=True): r for r in resources}.values())

    async def admissions(eng, resource):
        return [_outcome(await admit_offline(eng, resource, dry_run=True)),
                _outcome(await admit_offline(eng, resource, old=resource, operation="UPDATE", dry_run=True)),
                _outcome(await admit_offline(eng, resource, dry_run=True, background=True))]

    for resource in unique[::6]:  # a sixth of them: the suite's time is shared too
        assert await admissions(planned, resource) == await admissions(reference, resource), resource.get("metadata")
