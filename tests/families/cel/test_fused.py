"""The fused fast path of ValidatingPolicies gives the reference path's results, byte for byte.

Every evaluation in this directory is shadowed (see conftest.py): the fast path and the reference path
both run and must agree. Here: the cases the fast path decides, those where it must decline (and the
reference then gives its exact error, message or exemption), and the deadline. At scale (the conformance
corpus, groups of policies): test_fused_groups.py."""

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
from webhook.model.exception_trust import HONOUR_GIVEN
from webhook.policy.family import CelEvaluation, CompileEnv
from webhook.policy.snapshot import PolicySnapshot, PolicyStore
from webhook.state.memory import InMemoryClusterState

CEL = CelCompiler()
CORPUS = next((parent / "shared" / "conformance" / "kyverno-policies" for parent in Path(__file__).resolve().parents
               if (parent / "shared" / "conformance" / "kyverno-policies").is_dir()), None)
NAMESPACES = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps", "labels": {"env": "prod"}}}]


def engine(text: str, objects=(), evaluation=CelEvaluation.DEFAULT) -> AdmissionEngine:
    docs = [Document("p.yaml", i, d, None) for i, d in enumerate(yaml.safe_load_all(textwrap.dedent(text))) if d]
    result = CelFamily().compile(docs, CompileEnv(CEL, HONOUR_GIVEN, evaluation))
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


def named(name: str, text: str) -> str:
    return text.replace("metadata: {name: p}", f"metadata: {{name: {name}}}")


def results(result):
    return [(r.outcome.value, r.message) for r in result.results]


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


async def test_a_variable_read_after_a_comprehension_in_the_match_conditions_has_its_own_value(
        fast_path_agrees_with_reference):
    """cel-expr-python (cel-cpp) initialises a cel.bind lazily in a slot that a comprehension evaluated
    before it at the same nesting level leaves filled: the bind then reads the comprehension's last
    element instead of its own value. The fast path therefore binds every variable around the whole
    program (never after a condition), and policies are not joined side by side into one program."""
    eng = engine(policy('- {expression: "variables.containers.size() == 2", message: wrong variable}\n', conditions="""\
        matchConditions:
        - {name: any, expression: "object.spec.containers.exists(c, c.name != '')"}""", variables="""\
        variables:
        - {name: containers, expression: "object.spec.containers"}"""))
    # the last container has three fields: read by mistake, it would make the list's size 3
    two = pod(containers=[{"name": "a", "image": "nginx"}, {"name": "b", "image": "nginx", "args": ["-v"]}])
    assert results(await admit_offline(eng, two)) == [("pass", "success")]
    assert results(await admit_offline(eng, pod())) == [("fail", "wrong variable")]
    assert fast_path_agrees_with_reference.decided == 2


def test_the_runtime_hazard_the_fast_path_avoids_is_still_there():
    """When this fails, the runtime was fixed: the structure rules above may be relaxed."""
    # the joined shape is compiled unchecked (compile_bound), as the fused programs are: its list mixes types
    hazard = CEL.compile_bound("[[[5, 6], [7]].exists(x, true), cel.bind(v, [1, 2], v[0])]", [], "admission")
    assert hazard.evaluate({}) != [True, 1]
    bound_outside = CEL.compile_bound("cel.bind(v, [1, 2], [[[5, 6], [7]].exists(x, true), v[0]])", [], "admission")
    assert bound_outside.evaluate({}) == [True, 1]
