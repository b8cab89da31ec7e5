"""A group member's validate() on a request answers from the group's one memo entry (fusedgroup.Entry): the
outcome the prebuilt one the joined program decided, and the joined program's values (without `request` unless its text names it) must give
the whole activation's value. Every evaluation here is shadowed and form-checked too (conftest.py)."""

import pytest
import yaml

from tests.families.cel.test_fused import CEL, CORPUS, NAMESPACES, VALIDATIONS, engine, named, pod, policy, results
from tests.families.cel.test_fused_corpus import _corpus_documents, _match_requests
from tests.families.cel.test_fused_group import GROUP
from webhook.cel import Activation, CelError
from webhook.engine.offline import admit_offline
from webhook.families.cel import fused
from webhook.families.cel.base import CelPolicy
from webhook.families.cel.family import CelFamily
from webhook.families.cel.fusedgroup import FusedGroup
from webhook.model.policy import EvalContext
from webhook.policy.documents import Document
from webhook.policy.family import CompileEnv
from webhook.state.memory import InMemoryClusterState


def _members(texts):
    docs = [Document("p.yaml", i, yaml.safe_load(t), None) for i, t in enumerate(texts)]
    if CORPUS is not None:
        docs += [Document(str(path), i, d, None) for path, i, d in _corpus_documents()[0]]
    policies = CelFamily().compile(docs, CompileEnv(CEL)).policies
    return [p for p in policies if isinstance(p, CelPolicy) and p.route.group is not None]


def test_a_members_matches_from_its_group_are_its_own_matches():
    texts = [named(f"p{i}", policy(VALIDATIONS).replace("operations: [CREATE]", f"operations: [{op}]"))
             for i, op in enumerate(["CREATE", "UPDATE", "'*'", "DELETE"])]
    members = _members(texts)
    assert len(members) >= 4 and len({id(p.route.group) for p in members}) == 1
    state = InMemoryClusterState(NAMESPACES)
    shared = EvalContext(state, NAMESPACES[0], False, request=None)  # one context asked about many requests
    for _ in range(2):  # the second round from the plans the first one built
        for req in _match_requests():
            for background in (False, True):
                ctx = EvalContext(state, NAMESPACES[0], False, request=req, background=background)
                for p in members:
                    own = CelPolicy.matches(p, req, req.object, ctx)
                    assert p.matches(req, req.object, ctx) is own, (p.name, req)
                    assert p.matches(req, req.object, shared) is own, (p.name, req)


async def test_members_answer_from_one_decision_per_request_with_prebuilt_outcomes(fast_path_agrees_with_reference,
                                                                                    monkeypatch):
    eng = engine(GROUP)
    decisions = []
    decide = FusedGroup.decide

    def counted(self, plan, request, ctx):
        decisions.append(request)
        return decide(self, plan, request, ctx)
    monkeypatch.setattr(FusedGroup, "decide", counted)
    for _ in range(3):
        checked = await admit_offline(eng, pod(labels={"team": "a"}, hostNetwork=True))
        assert results(checked) == [("fail", "no host network"), ("pass", "success"), ("pass", "success"),
                                    ("pass", "success")]
    assert len(decisions) == 3  # once per request, whichever member asked first
    shadow = fast_path_agrees_with_reference
    assert shadow.decided == shadow.compared == 12  # every member's outcome a prebuilt one (shadow._prebuilt)


async def test_a_plan_that_cannot_be_built_leaves_each_member_its_own_way(fast_path_agrees_with_reference,
                                                                          monkeypatch):
    def broken(self, request, ctx):
        raise RuntimeError("never expected")
    monkeypatch.setattr(FusedGroup, "_build", broken)
    eng = engine(GROUP)
    checked = await admit_offline(eng, pod(labels={"team": "a"}, hostNetwork=True))
    assert results(checked) == [("fail", "no host network"), ("pass", "success"), ("pass", "success"),
                                ("pass", "success")]
    [plan] = eng.store.snapshot.policies[0].route.group._plans.values()
    assert plan.parts == ()
    shadow = fast_path_agrees_with_reference
    assert shadow.decided == shadow.compared == 4  # by the members' own programs


REQUEST = named("operation", policy('- {expression: "request.operation == \'CREATE\'", message: create only}\n'))


async def test_the_request_variable_is_there_when_the_joined_program_names_it(fast_path_agrees_with_reference,
                                                                               forms_checked):
    without = engine(GROUP)
    await admit_offline(without, pod(labels={"team": "a"}))
    [plan] = without.store.snapshot.policies[0].route.group._plans.values()
    assert not plan.reads_request
    with_request = engine("---\n".join([GROUP, REQUEST]))
    checked = await admit_offline(with_request, pod(labels={"team": "a"}))
    assert results(checked)[-1] == ("pass", "success")
    [plan] = with_request.store.snapshot.policies[0].route.group._plans.values()
    assert plan.reads_request and len(plan.parts[0].tables) == 5
    shadow = fast_path_agrees_with_reference
    assert shadow.decided == shadow.compared == 9
    assert forms_checked.python >= 2  # each joined program's Python form was checked against the runtime


def _value(program, values):
    try:
        return "value", program.evaluate_strict(Activation(values))
    except CelError:
        return "error", None


def test_a_program_reading_an_absent_variable_gives_an_error_or_the_value_it_has_whatever_the_variable():
    """Why leaving `request` out is exact even if `reads_request` were wrong: a read of an absent variable is an
    error (no decision: every member falls back), unless CEL's logic makes the value independent of it."""
    first = engine(GROUP).store.snapshot.policies[0]
    env = first.fast_path(first.variants[0]).env
    requests = [{"operation": "CREATE"}, {"operation": "UPDATE"}, {}, None]
    for text in ("request.operation == 'CREATE'", "has(request.operation)", "request == null",
                 "request.?operation.orValue('x') == 'x'", "[request].size() == 1 && false || true == false",
                 "request.operation == 'CREATE' || true", "cel.bind(r, request, r.operation == 'CREATE')"):
        program = CEL.compile_bound(text, [], env, strict=True)
        if program is None:
            pytest.skip("no C++ backend")
        absent = _value(program, {"object": {}})
        if absent[0] == "value":
            assert all(_value(program, {"object": {}, "request": r}) == absent for r in requests), text
    assert _value(CEL.compile_bound("request.operation == 'CREATE'", [], env, strict=True), {"object": {}})[0] == "error"
    assert fused.reads_request([CEL.compile_bound("object.request == 1", [], env, strict=True)])
    assert not fused.reads_request([CEL.compile_bound("object.requests == 'request'", [], env, strict=True)])
