"""The fused fast path of ValidatingPolicies gives the reference path's results, byte for byte.

Every evaluation in this directory is shadowed (see conftest.py): the fast path and the reference path
both run and must agree. Here: the whole conformance corpus through both, and the cases where the fast
path must decline (and the reference then gives its exact error, message or exemption)."""

import argparse
import io
import json
import textwrap
from pathlib import Path

import pytest
import yaml

from webhook.cel import CelCompiler
from webhook.engine import AdmissionEngine
from webhook.engine.offline import admit_offline
from webhook.families.cel import fused
from webhook.families.cel.family import CelFamily
from webhook.policy.documents import Document
from webhook.policy.family import CompileEnv
from webhook.policy.snapshot import PolicySnapshot, PolicyStore
from webhook.state.memory import InMemoryClusterState
from webhook.testsuite.command import run_test_command

CEL = CelCompiler()
CORPUS = next((parent / "shared" / "conformance" / "kyverno-policies" for parent in Path(__file__).resolve().parents
               if (parent / "shared" / "conformance" / "kyverno-policies").is_dir()), None)
NAMESPACES = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps", "labels": {"env": "prod"}}}]


def engine(text: str, objects=()) -> AdmissionEngine:
    docs = [Document("p.yaml", i, d, None) for i, d in enumerate(yaml.safe_load_all(textwrap.dedent(text))) if d]
    result = CelFamily().compile(docs, CompileEnv(CEL))
    assert not result.errors, result.errors
    store = PolicyStore()
    store.publish(PolicySnapshot.of(result.policies, 1))
    return AdmissionEngine(store, InMemoryClusterState([*NAMESPACES, *objects]))


def pod(labels=None, **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "apps", "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec}}


def policy(validations: str, conditions: str = "", variables: str = "", extra: str = "") -> str:
    return f"""\
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {{name: p}}
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - {{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}}
{textwrap.indent(textwrap.dedent(conditions), "  ")}
{textwrap.indent(textwrap.dedent(variables), "  ")}
{textwrap.indent(textwrap.dedent(extra), "  ")}
  validations:
{textwrap.indent(textwrap.dedent(validations), "  ")}
"""


def results(result):
    return [(r.outcome.value, r.message) for r in result.results]


@pytest.mark.skipif(CORPUS is None, reason="the shared conformance corpus is not beside this checkout")
def test_the_whole_conformance_corpus_agrees(fast_path_agrees_with_reference):
    shadow = fast_path_agrees_with_reference
    out = io.StringIO()
    paths = sorted(str(p) for p in CORPUS.iterdir() if p.is_dir())
    run_test_command(argparse.Namespace(paths=paths, detailed_results=False, output="json"), out, io.StringIO())
    assert not shadow.mismatches, shadow.mismatches[:3]
    print("compared", shadow.compared, "decided", shadow.decided)
    assert shadow.compared > 500 and shadow.decided > shadow.compared // 2, (shadow.compared, shadow.decided)


VALIDATIONS = """\
- {expression: "object.spec.containers.size() > 0", message: needs a container}
- {expression: "object.spec.?hostNetwork.orValue(false) == false", message: no host network}
"""


async def test_pass_fail_and_skip_are_decided_by_the_fast_path(fast_path_agrees_with_reference):
    eng = engine(policy(VALIDATIONS, conditions="""\
        matchConditions:
        - {name: labelled, expression: "object.metadata.?labels.?skip.orValue('') != 'yes'"}"""))
    assert results(await admit_offline(eng, pod())) == [("pass", "success")]
    assert results(await admit_offline(eng, pod(hostNetwork=True))) == [("fail", "no host network")]
    assert results(await admit_offline(eng, pod(labels={"skip": "yes"}))) == [("skip", "skip")]
    shadow = fast_path_agrees_with_reference
    assert shadow.decided == shadow.compared == 3


async def test_an_error_after_a_passing_validation_falls_back(fast_path_agrees_with_reference):
    eng = engine(policy(VALIDATIONS + '- {expression: "object.spec.nothing == 1", message: m}\n'))
    [(outcome, message)] = results(await admit_offline(eng, pod()))
    assert outcome == "error" and message.startswith("spec.validations[2].expression: ")
    assert fast_path_agrees_with_reference.decided == 0


async def test_a_false_validation_before_an_erroring_one_is_decided(fast_path_agrees_with_reference):
    eng = engine(policy('- {expression: "false", message: first}\n- {expression: "object.spec.nothing == 1"}\n'))
    assert results(await admit_offline(eng, pod())) == [("fail", "first")]
    assert fast_path_agrees_with_reference.decided == 1


@pytest.mark.parametrize("failure", ["Fail", "Ignore"])
async def test_match_conditions_errors(failure, fast_path_agrees_with_reference):
    erroring = '- {name: broken, expression: "object.spec.nothing == 1"}'
    conditions = lambda *more: "matchConditions:\n" + "\n".join([erroring, *more])  # noqa: E731
    extra = f"failurePolicy: {failure}"
    alone = engine(policy(VALIDATIONS, conditions=conditions(), extra=extra))
    [(outcome, message)] = results(await admit_offline(alone, pod()))
    assert (outcome, message.split(":")[0]) == (("error", "failed to evaluate match conditions") if failure == "Fail"
                                                else ("skip", "skip"))
    assert fast_path_agrees_with_reference.decided == 0
    # an error next to a false condition: skipped, as CEL's && and the reference both say
    with_false = engine(policy(VALIDATIONS, conditions=conditions('- {name: no, expression: "1 == 2"}'), extra=extra))
    assert results(await admit_offline(with_false, pod())) == [("skip", "skip")]
    non_bool = engine(policy(VALIDATIONS, conditions=conditions('- {name: n, expression: "object.kind"}',
                                                                '- {name: no, expression: "1 == 2"}'), extra=extra))
    assert results(await admit_offline(non_bool, pod())) == [("skip", "skip")]


async def test_a_non_bool_validation_falls_back_to_the_exact_error(fast_path_agrees_with_reference):
    eng = engine(policy('- {expression: "object.kind", message: m}\n'))
    [(outcome, message)] = results(await admit_offline(eng, pod()))
    assert outcome == "error" and "must evaluate to a bool, got str" in message
    assert fast_path_agrees_with_reference.decided == 0


async def test_variables_unread_failures_do_not_matter_read_ones_are_named(fast_path_agrees_with_reference):
    variables = """\
        variables:
        - {name: broken, expression: "object.spec.nothing.here"}
        - {name: containers, expression: "object.spec.containers"}"""
    eng = engine(policy('- {expression: "variables.containers.size() == 1", message: one}\n', variables=variables))
    assert results(await admit_offline(eng, pod())) == [("pass", "success")]
    assert fast_path_agrees_with_reference.decided == 1
    eng = engine(policy('- {expression: "variables.broken == 1", message: m}\n', variables=variables))
    [(outcome, message)] = results(await admit_offline(eng, pod()))
    assert outcome == "error" and "variable 'broken' failed" in message


async def test_message_expressions_are_evaluated_by_the_reference_path(fast_path_agrees_with_reference):
    eng = engine(policy('- {expression: "object.spec.?hostNetwork.orValue(false) == false", '
                        'messageExpression: "\'host network on \' + object.metadata.name"}\n'))
    assert results(await admit_offline(eng, pod())) == [("pass", "success")]
    assert fast_path_agrees_with_reference.decided == 1  # a pass needs no message
    assert results(await admit_offline(eng, pod(hostNetwork=True))) == [("fail", "host network on p")]
    assert fast_path_agrees_with_reference.decided == 1


async def test_exceptions_audit_annotations_and_lookups_take_the_reference_path(fast_path_agrees_with_reference):
    exception = """\
---
apiVersion: policies.kyverno.io/v1
kind: PolicyException
metadata: {name: allow, namespace: apps}
spec:
  policyRefs: [{name: p, kind: ValidatingPolicy}]
  matchConditions:
  - {name: infra, expression: "object.metadata.?labels.?tier.orValue('') == 'infra'"}
"""
    eng = engine(policy(VALIDATIONS) + exception)
    assert results(await admit_offline(eng, pod(hostNetwork=True))) == [("fail", "no host network")]
    [(outcome, message)] = results(await admit_offline(eng, pod(labels={"tier": "infra"}, hostNetwork=True)))
    assert outcome == "skip" and "allow" in message
    audit = policy(VALIDATIONS, extra='auditAnnotations:\n- {key: k, valueExpression: "\'v\'"}')
    assert results(await admit_offline(engine(audit), pod())) == [("pass", "success")]
    lookup = policy('- {expression: "resource.List(\'v1\', \'configmaps\', \'apps\').items.size() == 0"}\n')
    assert results(await admit_offline(engine(lookup), pod())) == [("pass", "success")]
    assert fast_path_agrees_with_reference.decided == 0


async def test_the_iteration_budget_bounds_the_fused_program_too(fast_path_agrees_with_reference):
    # each alone within the runtime's comprehension budget, together beyond it: the fused program runs
    # out, the reference path evaluates them one by one with a budget each
    heavy = "- {expression: \"[%s].all(i, [%s].all(j, true))\"}\n" % (", ".join(["1"] * 90), ", ".join(["1"] * 90))
    eng = engine(policy(heavy * 2))
    assert results(await admit_offline(eng, pod())) == [("pass", "success")]
    assert fast_path_agrees_with_reference.decided == 0


def test_what_cannot_be_fused():
    from webhook.families.cel.scope import Variables, compile_expr

    def expr(text):
        return compile_expr(CEL, text, "f", "kyverno")

    variables = Variables.compile(CEL, [{"name": "a", "expression": "object.kind"}], "v", "kyverno")
    assert fused.program_text([], [expr("variables.a == 'Pod'")], variables, True) is not None
    assert fused.program_text([], [expr("size(variables) == 1")], variables, True) is None
    assert fused.program_text([], [expr("has(variables.a)")], variables, True) is None
    assert fused.program_text([], [expr("http.Get('https://x').ok")], variables, True) is None
    assert fused.program_text([], [], variables, True) is None
    assert fused.compile_fused(CelCompiler("cel-python"), [], [expr("true")], variables, lambda code: None) is None


@pytest.mark.parametrize("text,is_pure", [
    ("has(rule.http) && request.resource.group == ''", True), ("object.spec.?time.orValue(1)", True),
    ("rule.resources.exists(resource, resource == 'x')", True), ("'a'.http + x[0].time + f(x).random", True),
    ("http.Get('x')", False), ("(http).Get('x')", False), (".http.Get('x')", False), ("x in .http.Get('u')", False),
    ("random()", False), ("image.GetMetadata('x')", False), ("imagedata.Get('x')", False), ("time.now()", False),
    ("resource.Get('v1', 'pods', 'a', 'b')", False), ("generator.Apply('x', [])", False),
    ("globalContext.Get('x')", False), ("x == resource", False), ("(resource)", False),
])
def test_pure_tells_calls_from_fields_of_the_same_name(text, is_pure):
    from webhook.cel.inline import pure

    assert pure(text) is is_pure


def _corpus_documents():
    policies, resources = [], []
    for path in sorted(CORPUS.rglob("*.yaml")):
        try:
            docs = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
        except yaml.YAMLError:
            continue
        if ".kyverno-test" in path.parts:
            resources += [d for d in docs if d.get("kind") not in ("Test", "Values", None) and "metadata" in d
                          and not str(d.get("apiVersion", "")).startswith(("policies.kyverno.io", "kyverno.io", "cli.kyverno.io"))]
        elif path.parts[-3].endswith("-vpol") or "pod-security-vpol" in path.parts:
            policies += [(path, i, d) for i, d in enumerate(docs) if d.get("kind") in ("ValidatingPolicy", "PolicyException")]
    return policies, resources


@pytest.mark.skipif(CORPUS is None, reason="the shared conformance corpus is not beside this checkout")
async def test_all_corpus_validating_policies_together_agree_on_every_corpus_resource(fast_path_agrees_with_reference):
    """Loaded together, the policies form groups (one joined program per request): every resource of the corpus,
    created, updated and scanned, gets the same results from the groups as from the reference path."""
    policies, resources = _corpus_documents()
    docs = [Document(str(path), i, d, None) for path, i, d in policies]
    result = CelFamily().compile(docs, CompileEnv(CEL))
    store = PolicyStore()
    store.publish(PolicySnapshot.of(result.policies, 1))
    eng = AdmissionEngine(store, InMemoryClusterState(NAMESPACES))
    grouped = [p for p in result.policies if getattr(p, "group", None) is not None]
    assert len(grouped) > 50
    unique = list({json.dumps(r, sort_keys=True): r for r in resources}.values())
    for index, resource in enumerate(unique[::4]):  # a quarter of them, the other operations on a twelfth:
        await admit_offline(eng, resource, dry_run=True)  # the suite's time is shared too
        if index % 3 == 0:
            await admit_offline(eng, resource, old=resource, operation="UPDATE", dry_run=True)
            await admit_offline(eng, resource, dry_run=True, background=True)
    shadow = fast_path_agrees_with_reference
    assert not shadow.mismatches, shadow.mismatches[:3]
    plans = grouped[0].group._plans.values()
    print("compared", shadow.compared, "decided", shadow.decided, "plans", len(plans))
    assert any(plan.program is not None for plan in plans)
    assert shadow.compared > 3_000 and shadow.decided > shadow.compared // 2


def named(name: str, text: str) -> str:
    return text.replace("metadata: {name: p}", f"metadata: {{name: {name}}}")


GROUP = "---\n".join([
    named("host-network", policy(VALIDATIONS)),
    named("labelled", policy('- {expression: "object.metadata.labels.team != \'\'", message: needs a team}\n')),
    named("message", policy('- {expression: "object.spec.?hostPID.orValue(false) == false", '
                            'messageExpression: "\'host PID on \' + object.metadata.name"}\n')),
    named("scan-only", policy('- {expression: "true"}\n', extra="evaluation: {background: {enabled: false}}")),
])


async def test_a_group_decides_its_members_in_one_program(fast_path_agrees_with_reference):
    eng = engine(GROUP)
    group = eng.store.snapshot.policies[0].group
    assert group is not None and len(group.members) == 4
    ok = await admit_offline(eng, pod(labels={"team": "a"}))
    assert results(ok) == [("pass", "success")] * 4
    [plan] = group._plans.values()
    assert plan.program is not None and len(plan.members) == 4
    # a member failing with a message expression: decided by the group, its message by the reference path
    failing = await admit_offline(eng, pod(labels={"team": "a"}, hostNetwork=True, hostPID=True))
    assert results(failing)[:3] == [("fail", "no host network"), ("pass", "success"), ("fail", "host PID on p")]
    shadow = fast_path_agrees_with_reference
    assert shadow.decided == shadow.compared - 1


async def test_one_members_error_sends_every_member_its_own_way(fast_path_agrees_with_reference):
    from webhook.families.cel import fusedgroup

    eng = engine(GROUP)
    group = eng.store.snapshot.policies[0].group
    for round_ in range(fusedgroup.GIVE_UP):
        unlabelled = await admit_offline(eng, pod())  # `labels.team` is no field: that member errors
        assert [r[0] for r in results(unlabelled)] == ["pass", "error", "pass", "pass"]
        assert results(unlabelled)[1][1].startswith("spec.validations[0].expression: ")
    [plan] = group._plans.values()
    assert plan.resting == fusedgroup.REST  # it kept failing: members go their own way for a while
    assert results(await admit_offline(eng, pod(labels={"team": "a"}))) == [("pass", "success")] * 4
    assert plan.resting == fusedgroup.REST - 1
    shadow = fast_path_agrees_with_reference
    assert shadow.decided == shadow.compared - fusedgroup.GIVE_UP  # the others still by their own programs


async def test_a_background_scan_plans_without_the_policies_it_does_not_run(fast_path_agrees_with_reference):
    eng = engine(GROUP)
    scan = await admit_offline(eng, pod(labels={"team": "a"}), dry_run=True, background=True)
    assert [r.policy.name for r in scan.results] == ["host-network", "labelled", "message"]
    [plan] = eng.store.snapshot.policies[0].group._plans.values()
    assert len(plan.members) == 3


def test_group_members_match_on_resource_and_operation_alone_and_have_no_exceptions():
    from webhook.families.cel.family import CelFamily as Family

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
    compiled = {p.name: p for p in Family().compile(docs, CompileEnv(CEL)).policies}
    assert compiled["a"].group is compiled["b"].group is not None
    assert [p.name for p in compiled["a"].group.members] == ["a", "b"]
    assert compiled["selector"].group is None and compiled["excepted"].group is None


async def test_a_member_that_compiles_only_in_its_faithful_form_stays_out_of_the_joined_program(
        fast_path_agrees_with_reference):
    opaque = named("opaque", policy('- {expression: "string(quantity(\'1Gi\')) == \'1Gi\'", message: q}\n'))
    eng = engine("---\n".join([GROUP, opaque]))
    first = await admit_offline(eng, pod(labels={"team": "a"}))
    [plan] = eng.store.snapshot.policies[0].group._plans.values()
    assert plan.program is not None and len(plan.members) == 4
    assert [r.policy.name for r in first.results][-1] == "opaque"


def _match_requests():
    from tests.cel_family.test_match import request

    shapes = [dict(), dict(kind="Deployment", group="apps", resource="deployments"),
              dict(kind="CronJob", group="batch", resource="cronjobs"), dict(kind="Job", group="batch", resource="jobs"),
              dict(kind="Namespace", resource="namespaces", namespace=""), dict(kind="ClusterRole",
              group="rbac.authorization.k8s.io", resource="clusterroles", namespace=""),
              dict(kind="Ingress", group="networking.k8s.io", resource="ingresses"),
              dict(kind="Pod", version="v2")]
    for shape in shapes:
        for op in ("CREATE", "UPDATE", "DELETE", "CONNECT"):
            for sub in ("", "status"):
                for extra in (dict(namespace="other", name="x"), dict(generate_name="web-"),
                              dict(labels={"app": "web", "tier": "frontend"})):
                    yield request(**{**shape, **extra, "op": op, "sub": sub})


def test_remembered_static_matches_are_the_matches(fast_path_agrees_with_reference):
    """Which variant a policy applies is remembered per resource and operation only where nothing else is
    read: every corpus policy (and some with selectors and names) picks the same variant as matching anew."""
    from webhook.families.cel.base import CelPolicy
    from webhook.model.policy import EvalContext

    texts = [policy(VALIDATIONS).replace("resources: [pods]}", f"resources: [pods], {extra}}}")
             for extra in ("resourceNames: [p, x]", "scope: Namespaced", "operations: ['*']")]
    texts.append(policy(VALIDATIONS).replace("    resourceRules:", "    objectSelector: {matchLabels: {app: web}}\n"
                                                                 "    resourceRules:"))
    docs = [Document("p.yaml", i, yaml.safe_load(named(f"p{i}", t)), None) for i, t in enumerate(texts)]
    if CORPUS is not None:
        docs += [Document(str(path), i, d, None) for path, i, d in _corpus_documents()[0]]
    policies = [p for p in CelFamily().compile(docs, CompileEnv(CEL)).policies if isinstance(p, CelPolicy)]
    assert sum(p.static_match for p in policies) >= 4 and not all(p.static_match for p in policies)
    state = InMemoryClusterState(NAMESPACES)
    for _ in range(2):  # the second round answers from what the first remembered
        for req in _match_requests():
            ctx = EvalContext(state, NAMESPACES[0], False, request=req)
            for p in policies:
                assert p.variant_for(req, req.object, ctx) is p._variant_for(req, req.object, ctx), (p.name, req)


async def test_a_fused_program_that_ran_past_the_policy_timeout_is_not_taken(fast_path_agrees_with_reference,
                                                                             monkeypatch):
    """The reference path refuses to start an expression past the policy's timeoutSeconds; a fused call that
    ran that long might have evaluated one the reference would have refused, so its answer is not used."""
    class Clock:
        now = 0.0

        @classmethod
        def monotonic(cls):
            cls.now += 2.0  # every call of the fast path's clock sees two more seconds go by
            return cls.now

    monkeypatch.setattr(fused, "time", Clock)
    timeout = "webhookConfiguration: {timeoutSeconds: 1}"
    single = engine(policy(VALIDATIONS, extra=timeout))
    assert results(await admit_offline(single, pod())) == [("pass", "success")]
    group = engine("---\n".join([named("a", policy(VALIDATIONS, extra=timeout)), named("b", policy(VALIDATIONS))]))
    assert results(await admit_offline(group, pod())) == [("pass", "success")] * 2
    # the group's call ran past `a`'s second: not taken; then `b`'s own call is within its ten
    assert fast_path_agrees_with_reference.decided == 1
    monkeypatch.setattr(fused.time, "monotonic", lambda: 0.0)
    assert results(await admit_offline(group, pod())) == [("pass", "success")] * 2
    assert fast_path_agrees_with_reference.decided == 3
