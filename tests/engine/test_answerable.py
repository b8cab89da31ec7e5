"""Which policies a batch may answer for is read once per snapshot (PolicySnapshot.answerable): a member that
did not compile, or a policy outside any batch, is asked itself even when a batch's answers name it; a new
snapshot is read afresh; an admission with nothing generated keeps its verdict, one with generates gets them."""

from dataclasses import dataclass, field
from typing import Any

from tests.support import review
from webhook.engine.dispatch import AdmissionEngine
from webhook.model.policy import FailurePolicy, Phase, PolicyId, SourceRef, ValidationOutcome
from webhook.model.results import passed
from webhook.model.review import parse_review
from webhook.policy.snapshot import PolicySnapshot, PolicyStore
from webhook.state.memory import InMemoryClusterState
import json


@dataclass(eq=False)
class _Policy:
    name: str
    batch: Any = None
    error: str | None = None
    generates: tuple = ()
    asked: list = field(default_factory=list)
    phases = frozenset({Phase.VALIDATE})
    failure_policy = FailurePolicy.FAIL
    annotations: Any = field(default_factory=dict)
    background = True

    @property
    def id(self) -> PolicyId:
        return PolicyId("test/v1", "Fake", self.name)

    @property
    def source(self) -> SourceRef:
        return SourceRef("fake.yaml", 0)

    def matches(self, request, obj, ctx) -> bool:
        return True

    async def validate(self, request, obj, ctx) -> ValidationOutcome:
        self.asked.append(self.name)
        return ValidationOutcome((passed(self.id, "own"),), generates=self.generates)


class _Batch:
    """Answers for every policy it is given, members or not."""

    def __init__(self, policies):
        self.policies = policies

    def answers(self, request, ctx):
        return {p: ValidationOutcome((passed(p.id, "batch"),)) for p in self.policies}


def _request():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "ns"}, "spec": {"containers": []}}
    return parse_review(json.dumps(review(pod, dry_run=True)).encode())


def _rules(verdict):
    return [(r.policy.name, r.rule, r.outcome.value) for r in verdict.results]


async def test_a_batch_answers_only_for_members_that_compiled_and_a_new_snapshot_is_read_afresh():
    asked: list[str] = []
    member, broken, outsider = (_Policy("member", asked=asked), _Policy("broken", error="bad", asked=asked),
                                _Policy("outsider", asked=asked))
    batch = _Batch([member, broken, outsider])
    member.batch = broken.batch = batch
    store = PolicyStore()
    store.publish(PolicySnapshot.of([member, broken, outsider], 1))
    engine = AdmissionEngine(store, InMemoryClusterState())
    for _ in range(2):  # the second request reads what the first remembered
        verdict = await engine.validate(_request())
        assert _rules(verdict) == [("member", "batch", "pass"), ("broken", "compile", "error"),
                                   ("outsider", "own", "pass")]
        assert asked == ["outsider"]
        asked.clear()
    fixed = _Policy("broken", asked=asked, batch=batch)  # the same names in a new snapshot: its own flags
    batch.policies = [member, fixed, outsider]
    outsider.batch = batch
    store.publish(PolicySnapshot.of([member, fixed, outsider], 2))
    verdict = await engine.validate(_request())
    assert _rules(verdict) == [("member", "batch", "pass"), ("broken", "batch", "pass"), ("outsider", "batch", "pass")]
    assert asked == []


async def test_generated_objects_come_with_the_verdict_and_none_leave_it_as_it_is():
    store = PolicyStore()
    secret = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "made", "namespace": "ns"}}
    store.publish(PolicySnapshot.of([_Policy("plain"), _Policy("maker", generates=(secret,))], 1))
    engine = AdmissionEngine(store, InMemoryClusterState())
    request = _request()
    request = parse_review(json.dumps(review(dict(request.object), dry_run=False)).encode())
    verdict = await engine.validate(request)
    assert verdict.allowed and verdict.generated == (secret,)
    store.publish(PolicySnapshot.of([_Policy("plain")], 2))
    verdict = await engine.validate(request)
    assert verdict.allowed and verdict.generated == () and _rules(verdict) == [("plain", "own", "pass")]
