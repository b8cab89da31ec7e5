"""The engine's batches (model.policy.PolicyBatch): what a batch answers for its members must be what the members
asked one by one (matches(), then validate()) give, in the same order among the other policies' results; a member
the batch leaves out, or a batch that fails, is asked itself. The CEL family's FusedGroup is the batch here (its
own tests, under tests/cel_family, ask every member itself: their shadow compares each evaluation)."""

import json
import logging

import pytest
import yaml

from tests.cel_family.test_fused import CEL, CORPUS, NAMESPACES, engine, pod, results
from tests.cel_family.test_fused_corpus import _corpus_documents
from tests.cel_family.test_fused_group import GROUP
from webhook.engine.dispatch import AdmissionEngine
from webhook.engine.offline import admit_offline
from webhook.families.cel.family import CelFamily
from webhook.families.cel.fusedgroup import FusedGroup
from webhook.families.cel.validating import ValidatingPolicy
from webhook.policy.documents import Document
from webhook.policy.family import CompileEnv
from webhook.policy.snapshot import PolicySnapshot, PolicyStore
from webhook.state.memory import InMemoryClusterState


@pytest.fixture
def asked(monkeypatch):
    """The members the engine asked itself (validate() called), by name."""
    names: list[str] = []
    validate = ValidatingPolicy.validate

    async def counted(self, request, obj, ctx):
        names.append(self.name)
        return await validate(self, request, obj, ctx)
    monkeypatch.setattr(ValidatingPolicy, "validate", counted)
    return names


def _unbatched(monkeypatch):
    monkeypatch.setattr(FusedGroup, "answers", lambda self, request, ctx: {})


def _outcome(checked):
    return checked.allowed, checked.message, checked.results, checked.warnings, checked.code


async def test_a_batch_answers_for_the_members_it_decided_and_the_engine_asks_the_others(asked):
    eng = engine(GROUP)
    assert eng.store.snapshot.batches == (eng.store.snapshot.policies[0].batch,)
    checked = await admit_offline(eng, pod(labels={"team": "a"}, hostNetwork=True))
    assert results(checked) == [("fail", "no host network"), ("pass", "success"), ("pass", "success"),
                                ("pass", "success")]
    assert asked == []  # four prebuilt outcomes: no member was asked
    # a failure whose message is a messageExpression is the member's own to build: it alone is asked
    checked = await admit_offline(eng, pod(labels={"team": "a"}, hostPID=True))
    assert results(checked) == [("pass", "success"), ("pass", "success"), ("fail", "host PID on p"),
                                ("pass", "success")]
    assert asked == ["message"]


async def test_a_background_scan_asks_each_member_that_takes_part(asked):
    eng = engine(GROUP)
    checked = await admit_offline(eng, pod(labels={"team": "a"}), background=True, dry_run=True)
    assert [r.policy.name for r in checked.results] == ["host-network", "labelled", "message"]  # not scan-only
    assert results(checked) == [("pass", "success")] * 3


async def test_a_failing_batch_leaves_each_member_its_own_turn(asked, monkeypatch, caplog):
    def broken(self, request, ctx):
        raise RuntimeError("never expected")
    monkeypatch.setattr(FusedGroup, "answers", broken)
    eng = engine(GROUP)
    with caplog.at_level(logging.ERROR, logger="webhook.engine.dispatch"):
        checked = await admit_offline(eng, pod(labels={"team": "a"}, hostNetwork=True))
    assert results(checked) == [("fail", "no host network"), ("pass", "success"), ("pass", "success"),
                                ("pass", "success")]
    assert asked == ["host-network", "labelled", "message", "scan-only"]
    assert "policy batch failed" in caplog.text


async def test_members_the_request_does_not_match_give_no_result():
    eng = engine(GROUP)
    checked = await admit_offline(eng, None, old=pod(labels={"team": "a"}), operation="DELETE")  # CREATE only
    assert checked.allowed and checked.results == ()


@pytest.mark.skipif(CORPUS is None, reason="the shared conformance corpus is not beside this checkout")
async def test_batched_and_one_by_one_dispatch_agree_on_every_corpus_resource(monkeypatch):
    """The corpus' ValidatingPolicies with GROUP's and a non-member between them; each resource created, updated
    and scanned: the same verdict, results (in order), warnings with and without the batches."""
    docs = [Document("p.yaml", i, d, None) for i, d in enumerate(yaml.safe_load_all(GROUP))]
    docs += [Document(str(path), i, d, None) for path, i, d in _corpus_documents()[0]]
    compiled = CelFamily().compile(docs, CompileEnv(CEL)).policies
    members = [p for p in compiled if p.batch is not None]
    assert len(members) > 50 and len(members) < len(compiled)  # members and policies asked themselves, mixed
    store = PolicyStore()
    store.publish(PolicySnapshot.of(compiled, 1))
    eng = AdmissionEngine(store, InMemoryClusterState(NAMESPACES))
    _, resources = _corpus_documents()
    unique = list({json.dumps(r, sort_keys=True): r for r in resources}.values())
    answered = 0
    answers = FusedGroup.answers

    def counted(self, request, ctx):
        nonlocal answered
        found = answers(self, request, ctx)
        answered += sum(outcome is not None for outcome in found.values())
        return found

    async def admissions(resource):
        return [_outcome(await admit_offline(eng, resource, dry_run=True)),
                _outcome(await admit_offline(eng, resource, old=resource, operation="UPDATE", dry_run=True)),
                _outcome(await admit_offline(eng, resource, dry_run=True, background=True))]

    for resource in unique[::6]:  # a sixth of them: the suite's time is shared too
        with monkeypatch.context() as patched:
            patched.setattr(FusedGroup, "answers", counted)
            batched = await admissions(resource)
        with monkeypatch.context() as patched:
            _unbatched(patched)
            one_by_one = await admissions(resource)
        assert batched == one_by_one, resource.get("metadata")
    assert answered > 1000  # the batch answered (with an outcome) for many members
