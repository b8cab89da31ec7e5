"""Fused groups (webhook.families.cel.fusedgroup): the fast-path ValidatingPolicies a request matches decided
by one joined program, every member's variables bound around the list of the members' bodies. Every
evaluation here is shadowed (conftest.py): the group's decision must equal the reference path's."""

import sys

import yaml

from tests.families.cel.test_fused import CEL, VALIDATIONS, engine, named, pod, policy, results
from tests.support import REPO
from webhook.engine.offline import admit_offline
from webhook.cel import CelCompiler, to_python
from webhook.families.cel import fused, fusedgroup
from webhook.policy.documents import Document
from webhook.model.exception_trust import HONOUR_GIVEN
from webhook.policy.family import CompileEnv

GROUP = "---\n".join([
    named("host-network", policy(VALIDATIONS)),
    named("labelled", policy('- {expression: "object.metadata.labels.team != \'\'", message: needs a team}\n')),
    named("message", policy('- {expression: "object.spec.?hostPID.orValue(false) == false", '
                            'messageExpression: "\'host PID on \' + object.metadata.name"}\n')),
    named("scan-only", policy('- {expression: "true"}\n', extra="evaluation: {background: {enabled: false}}")),
])


class Calls:
    """Counts the evaluations of fused programs (alone or joined) that gave a value: on the runtime, or a joined
    program's Python form (`tiers` says which)."""

    def __init__(self, monkeypatch):
        self.values, self.tiers = [], []
        run, run_python = fused.run, fused.run_python

        def counted(program, shared, budget):
            value = run(program, shared, budget)
            self.values.append(value)
            self.tiers.append("runtime")
            return value

        def counted_python(program, values, budget):
            value = run_python(program, values, budget)
            self.values.append(value)
            self.tiers.append("python")
            return value
        monkeypatch.setattr(fused, "run", counted)
        monkeypatch.setattr(fused, "run_python", counted_python)


def _plan(eng):
    [plan] = eng.store.snapshot.policies[0].route.group._plans.values()
    return plan


async def test_a_group_decides_its_members_in_one_program(fast_path_agrees_with_reference, monkeypatch):
    eng = engine(GROUP)
    calls = Calls(monkeypatch)
    group = eng.store.snapshot.policies[0].route.group
    assert group is not None and len(group.members) == 4
    ok = await admit_offline(eng, pod(labels={"team": "a"}))
    assert results(ok) == [("pass", "success")] * 4
    [part] = _plan(eng).parts
    assert len(part.tables) == 4 and calls.values == [[0, 0, 0, 0]]
    # a member failing with a message expression: decided by the group, its message by the reference path
    failing = await admit_offline(eng, pod(labels={"team": "a"}, hostNetwork=True, hostPID=True))
    assert results(failing)[:3] == [("fail", "no host network"), ("pass", "success"), ("fail", "host PID on p")]
    shadow = fast_path_agrees_with_reference
    assert shadow.decided == shadow.compared - 1


async def _admit_unlabelled(eng, times):
    for _ in range(times):
        unlabelled = await admit_offline(eng, pod())  # `labels.team` is no field: that member errors
        assert [r[0] for r in results(unlabelled)] == ["pass", "error", "pass", "pass"]
        assert results(unlabelled)[1][1].startswith("spec.validations[0].expression: ")


async def test_one_members_error_leaves_the_others_told_by_the_python_form(fast_path_agrees_with_reference, monkeypatch):
    eng = engine(GROUP)
    calls = Calls(monkeypatch)
    await _admit_unlabelled(eng, 3)
    [part] = _plan(eng).parts
    assert part.python is not None and calls.tiers == ["python"] * 3  # the runtime's joined program never ran
    assert calls.values[0] == [0, to_python.NOT_TOLD, 0, 0]
    shadow = fast_path_agrees_with_reference
    assert shadow.decided == shadow.compared - 3  # the erring one by its own way, every time


async def test_one_members_error_sends_every_member_its_own_way_on_the_runtime(fast_path_agrees_with_reference,
                                                                               monkeypatch):
    """Where the Python form cannot tell (here: made to refuse), the runtime's joined program is one value: one
    member's error is the list's, and every member goes its own way for that request."""
    def refused(*_):
        raise to_python.Refused
    monkeypatch.setattr(fused, "run_python", refused)
    eng = engine(GROUP)
    await _admit_unlabelled(eng, 3)
    assert results(await admit_offline(eng, pod(labels={"team": "a"}))) == [("pass", "success")] * 4
    shadow = fast_path_agrees_with_reference
    assert shadow.decided == shadow.compared - 3  # the others still by their own programs


async def test_a_background_scan_plans_without_the_policies_it_does_not_run(fast_path_agrees_with_reference):
    eng = engine(GROUP)
    scan = await admit_offline(eng, pod(labels={"team": "a"}), dry_run=True, background=True)
    assert [r.policy.name for r in scan.results] == ["host-network", "labelled", "message"]
    [part] = _plan(eng).parts
    assert len(part.tables) == 3


def test_group_members_match_on_resource_and_operation_alone_and_have_no_exceptions():
    from webhook.families.cel.family import CelFamily

    selector = policy(VALIDATIONS).replace("    resourceRules:", "    objectSelector: {matchLabels: {a: b}}\n    resourceRules:")
    exception = """\
apiVersion: policies.kyverno.io/v1
kind: PolicyException
metadata: {name: allow, namespace: apps}
spec:
  policyRefs: [{name: excepted, kind: ValidatingPolicy}]
  matchConditions: [{name: x, expression: "true"}]
"""
    texts = [named("a", policy(VALIDATIONS)), named("b", policy(VALIDATIONS)), named("selector", selector),
             named("excepted", policy(VALIDATIONS)), exception]
    docs = [Document("p.yaml", i, yaml.safe_load(t), None) for i, t in enumerate(texts)]
    compiled = {p.name: p for p in CelFamily().compile(docs, CompileEnv(CEL, HONOUR_GIVEN)).policies}
    assert compiled["a"].route.group is compiled["b"].route.group is not None
    assert [m.slot for m in compiled["a"].route.group.members] == [compiled["a"].route.slot, compiled["b"].route.slot]
    assert compiled["selector"].route.group is None and compiled["excepted"].route.group is None
    assert compiled["selector"].traits.route == "fused" and "selectors" in compiled["selector"].traits.why
    assert compiled["excepted"].traits.route == "reference" and "PolicyExceptions" in compiled["excepted"].traits.why


async def test_a_member_that_compiles_only_in_its_faithful_form_stays_out_of_the_joined_program(
        fast_path_agrees_with_reference):
    opaque = named("opaque", policy('- {expression: "string(quantity(\'1Gi\')) == \'1Gi\'", message: q}\n'))
    eng = engine("---\n".join([GROUP, opaque]))
    first = await admit_offline(eng, pod(labels={"team": "a"}))
    [part] = _plan(eng).parts
    assert len(part.tables) == 4
    assert [r.policy.name for r in first.results][-1] == "opaque"


async def test_policies_with_and_without_variables_side_by_side_get_the_references_results(
        fast_path_agrees_with_reference, monkeypatch):
    """The failure that removed the first groups: a member without variables whose validation runs a
    comprehension, then members whose variables were bound inside their list element (the stale slot:
    an error, or the comprehension's last element read as the variable). Hoisted, the joined program
    gives the reference's results, in one call."""
    calls = Calls(monkeypatch)
    scan = named("scan", policy('- {expression: "object.spec.containers.exists(c, c.name != \'\')", message: unnamed}\n'))
    sized = named("sized", policy('- {expression: "variables.containers.size() == 2", message: wrong variable}\n',
                                  variables="""\
        variables:
        - {name: containers, expression: "object.spec.containers"}"""))
    names = named("names", policy('- {expression: "variables.names == [\'a\', \'b\']", message: wrong names}\n',
                                  conditions="""\
        matchConditions:
        - {name: any, expression: "object.spec.containers.all(c, c.image != '')"}""", variables="""\
        variables:
        - {name: names, expression: "object.spec.containers.map(c, c.name)"}"""))
    eng = engine("---\n".join([scan, sized, names]))
    # the last container has three fields: read by mistake as `containers`, the list's size would be 3
    two = pod(containers=[{"name": "a", "image": "nginx"}, {"name": "b", "image": "nginx", "args": ["-v"]}])
    assert results(await admit_offline(eng, two)) == [("pass", "success")] * 3
    assert calls.values == [[0, 0, 0]]
    assert results(await admit_offline(eng, pod())) == [("pass", "success"), ("fail", "wrong variable"),
                                                        ("fail", "wrong names")]
    assert calls.values[1] == [0, 1, 1]
    # the removed shape, on the same members, gets the first pod wrong
    members = [fast for _, fast in [(None, p.fast_path(p.variants[0])) for p in eng.store.snapshot.policies]]
    side_by_side = CEL.compile_bound("[" + ", ".join(m.source for m in members) + "]", [], members[0].env, strict=True)
    from webhook.families.cel.base import shared_activation  # noqa: F401  (the activation the fast path uses)
    from webhook.cel import Activation
    try:
        old = side_by_side.evaluate_strict(Activation({"object": two, "exceptions": {}}))
    except Exception as exc:
        old = exc
    assert old != [0, 0, 0]
    shadow = fast_path_agrees_with_reference
    assert shadow.decided == shadow.compared == 6


async def test_a_users_own_bind_keeps_the_policy_off_the_fused_programs(fast_path_agrees_with_reference, monkeypatch):
    """A user's cel.bind after a comprehension of a match condition (or of an earlier member) would be
    misread in a generated program; the reference path, evaluating expressions one by one, reads it right."""
    calls = Calls(monkeypatch)
    bound = named("bound", policy('- {expression: "cel.bind(v, [0], v.size() == 1)", message: misread}\n',
                                  conditions="""\
        matchConditions:
        - {name: any, expression: "object.spec.containers.exists(c, true)"}"""))
    eng = engine("---\n".join([named("first", policy(VALIDATIONS)), bound, named("last", policy(VALIDATIONS))]))
    two = pod(containers=[{"name": "a", "image": "nginx"}, {"name": "b", "image": "nginx", "args": ["-v"]}])
    assert results(await admit_offline(eng, two)) == [("pass", "success")] * 3
    assert calls.values == [[0, 0]]  # the other two, joined
    assert eng.store.snapshot.policies[1].fast_path(eng.store.snapshot.policies[1].variants[0]) is None


def test_a_generated_name_in_a_users_text_keeps_the_policy_off_the_fused_programs():
    eng = engine(policy('- {expression: "[1].all(qm__v_x, qm__v_x > 0)", message: m}\n'))
    only = eng.store.snapshot.policies[0]
    assert only.fast_path(only.variants[0]) is None


def test_rename_touches_generated_names_only():
    text = "qm__v_a + 'qm__v_a' + x.qm__v_ab // qm__v_a\n + qm__v_ab"
    assert fusedgroup.rename(text, {"qm__v_a": "qm__j0_a", "qm__v_ab": "qm__j1_ab"}) == \
        "qm__j0_a + 'qm__v_a' + x.qm__j1_ab // qm__v_a\n + qm__j1_ab"


async def test_the_pod_security_policies_decide_a_mutated_notebook_pod_in_one_call(fast_path_agrees_with_reference,
                                                                                   monkeypatch, tmp_path):
    """The load suite's gpu-validate body (examples/notebook-pod.yaml as quartermaster's /mutate left it) with
    the default policies and the 16 pod-security ValidatingPolicies: one runtime call decides all 16."""
    load_tests = REPO / "load-tests"
    sys.path.insert(0, str(load_tests))
    try:
        import bench_request as bench
    finally:
        sys.path.remove(str(load_tests))
    from webhook.app import Quartermaster, Settings
    from webhook.model.review import parse_review
    from webhook.server.app import build_app

    policies, extra = bench.policies_dir(tmp_path / "policies", with_pod_security=True)
    if extra < 16:
        import pytest
        pytest.skip("the pod-security corpus is not beside this checkout")
    namespaces = [bench.namespace("apps", profile=False), bench.namespace(bench.PROFILE, True, f"{bench.PROFILE}@example.org")]
    state = bench.write_state(tmp_path / "state" / "state.yaml", namespaces, {})
    qm = Quartermaster.build(Settings(policies=policies, state=state.parent))
    qm.load_policies()
    app = build_app(qm.services())
    handlers = {r.resource.canonical: r.handler for r in app.router.routes() if r.method == "POST"}
    bodies = await bench._bodies(handlers["/mutate"], app)
    calls = Calls(monkeypatch)
    shadow = fast_path_agrees_with_reference
    before = shadow.decided
    verdict = await qm.engine.validate(parse_review(bodies["gpu-validate"][1]))
    assert len(calls.values) == 1 and len(calls.values[0]) == 16, calls.values
    assert calls.tiers == ["python"]  # the joined program's Python form: the runtime was not asked
    assert shadow.decided - before == 16
    assert sum(1 for r in verdict.results if r.policy.kind == "ValidatingPolicy") == 16


def _too_deep_for_one_program():
    """20 members with two variables each of their own: the runtime's parser limits nesting (~28 binds)."""
    texts = [named(f"p{i}", policy(f'- {{expression: "variables.a{i} + variables.b{i} == {2 * i}", message: m{i}}}\n',
                                   variables=f"""\
        variables:
        - {{name: a{i}, expression: "object.spec.containers.size() + {i - 1}"}}
        - {{name: b{i}, expression: "object.spec.containers.map(c, c.name).size() + {i - 1}"}}"""))
             for i in range(20)]
    return engine("---\n".join(texts))


async def test_members_too_deep_for_one_program_are_split(fast_path_agrees_with_reference, monkeypatch):
    """The runtime's parser limits nesting (~28 binds): 20 members with two variables each of their own
    make two or more joined programs, each deciding its members."""
    eng = _too_deep_for_one_program()
    calls = Calls(monkeypatch)
    assert results(await admit_offline(eng, pod())) == [("pass", "success")] * 20
    parts = _plan(eng).parts
    assert len(parts) >= 2 and sum(len(part.tables) for part in parts) == 20
    assert len(calls.values) == len(parts)
    shadow = fast_path_agrees_with_reference
    assert shadow.decided == shadow.compared == 20


class Compiles:
    """Counts what the CEL compiler is asked to compile (a member's fast path, a joined program)."""

    def __init__(self, monkeypatch):
        self.count = 0
        compile_bound = CelCompiler.compile_bound

        def counted(compiler, *args, **kwargs):
            self.count += 1
            return compile_bound(compiler, *args, **kwargs)
        monkeypatch.setattr(CelCompiler, "compile_bound", counted)


async def test_a_planned_group_compiles_nothing_on_its_first_pod(fast_path_agrees_with_reference, monkeypatch):
    """The family plans the set at load (webhook.families.cel.plan): the first Pod finds every member's fast path
    and the joined program built, so no request compiles on the event loop."""
    compiles = Compiles(monkeypatch)
    eng = engine(GROUP)
    assert compiles.count > 1  # at load: the members' programs and the joined one
    compiles.count = 0
    calls = Calls(monkeypatch)
    assert results(await admit_offline(eng, pod(labels={"team": "a"}))) == [("pass", "success")] * 4
    assert compiles.count == 0
    [part] = _plan(eng).parts
    assert len(part.tables) == 4 and calls.values == [[0, 0, 0, 0]]  # decided in one joined program


async def test_planning_builds_the_halves_of_members_too_deep_for_one_program(monkeypatch):
    # (not beside the reference path's shadow, fast_path_agrees_with_reference: its own programs compile as it runs)
    eng = _too_deep_for_one_program()
    compiles = Compiles(monkeypatch)
    assert results(await admit_offline(eng, pod())) == [("pass", "success")] * 20
    assert compiles.count == 0
    parts = _plan(eng).parts
    assert len(parts) >= 2 and sum(len(part.tables) for part in parts) == 20


async def test_plans_with_the_same_members_share_programs(fast_path_agrees_with_reference):
    """A CREATE and an UPDATE of a Pod have plans of their own (their keys differ) over one compiled program."""
    eng = engine(GROUP.replace("operations: [CREATE]", "operations: [CREATE, UPDATE]"))
    created = await admit_offline(eng, pod(labels={"team": "a"}))
    updated = await admit_offline(eng, pod(labels={"team": "a"}), operation="UPDATE", old=pod(labels={"team": "a"}))
    assert results(created) == results(updated) == [("pass", "success")] * 4
    create, update = eng.store.snapshot.policies[0].route.group._plans.values()
    [first], [second] = create.parts, update.parts
    assert first.program is second.program and first is not second
