"""``$(...)`` references (Kyverno pkg/engine/variables): resolved against the policy document itself, relative to
the referencing leaf (``..`` steps) or absolute, with value operators, in patterns, anyPattern, foreach patterns
and mutate patches; unresolved ones are rule errors; anywhere else a reference is refused at load."""

import jsonpatch
import pytest

from tests.families.kyverno.test_rules import policy, request
from webhook.families.kyverno.compile import PolicyError
from webhook.families.kyverno.engine import mutate_rules, validate_rules
from webhook.families.kyverno.rule_env import RuleEnv
from webhook.families.kyverno.references import BrokenReference, go_path_join, resolve_document


def memory_pod(requests, limits="2Gi"):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "m", "namespace": "team"},
            "spec": {"containers": [{"name": "c", "image": "nginx",
                                     "resources": {"requests": {"memory": requests}, "limits": {"memory": limits}}}]}}


def verdict(pattern, obj, key="pattern"):
    rule = {"name": "mem", "validate": {"message": "memory", key: pattern}}
    (outcome,) = validate_rules(policy(rule).validate_rules, request(obj), RuleEnv())
    return outcome


def resources(requests, limits="2Gi"):
    return {"spec": {"containers": [{"resources": {"requests": {"memory": requests}, "limits": {"memory": limits}}}]}}


@pytest.mark.parametrize("reference, value, status", [
    ("$(<=./../../limits/memory)", "1Gi", "pass"),       # requests <= the pattern's limits (2Gi)
    ("$(<=./../../limits/memory)", "2Gi", "pass"),
    ("$(<=./../../limits/memory)", "3Gi", "fail"),
    ("<=$(./../../limits/memory)", "1Gi", "pass"),       # operator outside the reference
    (">=$(../../limits/memory)", "1Gi", "fail"),
    ("$(../../limits/memory)", "2Gi", "pass"),           # plain: equal to the referenced pattern value
    ("$(../../limits/memory)", "1Gi", "fail"),
    ("$(<=/spec/containers/0/resources/limits/memory)", "1Gi", "pass"),   # absolute, from the pattern root
    ("$(<=/spec/containers/0/resources/limits/memory)", "4Gi", "fail"),
    ("1Gi-$(../../limits/memory)", "1536Mi", "pass"),    # a range built from a reference
    ("1Gi-$(../../limits/memory)", "3Gi", "fail"),
])
def test_pattern_references_with_operators(reference, value, status):
    outcome = verdict(resources(reference, "2Gi"), memory_pod(value, "2Gi"))
    assert outcome.outcome == status, outcome.message


def test_reference_is_to_the_pattern_not_the_resource():
    # Kyverno resolves against the policy: the pod's own limits play no part, the pattern's "?*" does
    pattern = resources("$(../../limits/memory)", "?*")
    assert verdict(pattern, memory_pod("1Gi", "2Gi")).outcome == "pass"
    assert verdict(pattern, memory_pod("", "2Gi")).outcome == "fail"


@pytest.mark.parametrize("reference, why", [
    ("$(../limits/memory)", "no leaf at /spec/containers/0/resources/requests/limits/memory"),  # one .. too few
    ("$(/some/memory)", "no leaf at /some/memory"),
    ("$(>=)", "expected path"),
])
def test_unresolved_references_are_rule_errors(reference, why):
    outcome = verdict(resources(reference), memory_pod("1Gi"))
    assert outcome.outcome == "error" and "variable substitution failed" in outcome.message and why in outcome.message


def test_types_of_referenced_values():
    assert resolve_document({"a": "$(>../n)", "n": 3}) == {"a": ">3.000000", "n": 3}    # Go's %f
    assert isinstance(resolve_document({"a": "$(../n)", "n": 3}), BrokenReference)     # no operator: strings only
    assert isinstance(resolve_document({"a": "$(>../n)", "n": True}), BrokenReference)
    assert isinstance(resolve_document({"a": "$(../n)", "n": None}), BrokenReference)
    assert isinstance(resolve_document({"a": "$(../n)", "n": {"x": "1"}}), BrokenReference)


def test_anchored_keys_escapes_and_embedded_references():
    pattern = {"metadata": {"labels": {"app": "web-*"}},
               "spec": {"containers": [{"(name)": "$(/metadata/labels/app)", "image": "registry/$(/metadata/labels/app)"}]}}
    assert resolve_document(pattern)["spec"]["containers"][0] == {"(name)": "web-*", "image": "registry/web-*"}
    # the referenced leaf may sit under an anchor; an escaped reference keeps its text without the backslash
    doc = {"(spec)": {"ns": "n1"}, "a": "$(../spec/ns)", "b": "\\$(VAR)"}
    assert resolve_document(doc) == {"(spec)": {"ns": "n1"}, "a": "n1", "b": "$(VAR)"}
    # Kyverno keeps the referencing leaf's own anchors in the joined path: such a reference does not resolve
    assert isinstance(resolve_document({"^(c)": [{"a": "$(../b)", "b": "1"}]}), BrokenReference)
    assert resolve_document({"c": [{"a": "$(../b)", "b": "1"}]}) == {"c": [{"a": "1", "b": "1"}]}
    # "$()" is no reference (Kyverno's regex needs a character inside): a literal that fails to match
    assert verdict(resources("$()"), memory_pod("1Gi")).outcome == "fail"


def test_any_pattern_and_foreach_patterns():
    any_pattern = [{"spec": {"containers": [{"image": "$(../name)", "name": "nginx"}]}},
                   resources("$(<=../../limits/memory)", "1Gi")]
    assert verdict(any_pattern, memory_pod("512Mi", "1Gi"), "anyPattern").outcome == "pass"   # second alternative
    assert verdict(any_pattern, memory_pod("2Gi", "1Gi"), "anyPattern").outcome == "fail"
    rule = {"name": "each", "validate": {"foreach": [{
        "list": "request.object.spec.containers",
        "pattern": {"resources": {"requests": {"memory": "$(<=../../limits/memory)"}, "limits": {"memory": "1Gi"}}}}]}}
    assert validate_rules(policy(rule).validate_rules, request(memory_pod("512Mi", "1Gi")), RuleEnv())[0].outcome == "pass"
    assert validate_rules(policy(rule).validate_rules, request(memory_pod("2Gi", "4Gi")), RuleEnv())[0].outcome == "fail"


def test_patch_strategic_merge_references_resolve_against_the_rule():
    rule = {"name": "label", "mutate": {"patchStrategicMerge": {"metadata": {"labels": {
        "team": "platform", "owner": "$(./../team)", "rule": "$(/name)", "literal": "\\$(HOME)"}}}}}
    obj = memory_pod("1Gi")
    result = mutate_rules(policy(rule).mutate_rules, request(obj), RuleEnv())
    labels = result.resource["metadata"]["labels"]
    assert labels == {"team": "platform", "owner": "platform", "rule": "label", "literal": "$(HOME)"}
    patch = jsonpatch.make_patch(obj, result.resource)
    assert patch.apply(obj) == result.resource


def test_foreach_mutation_references_and_unresolved_patch_error():
    rule = {"name": "each", "mutate": {"foreach": [{"list": "request.object.spec.containers", "patchStrategicMerge": {
        "metadata": {"annotations": {"a": "x", "b": "$(../a)"}}}}]}}
    result = mutate_rules(policy(rule).mutate_rules, request(memory_pod("1Gi")), RuleEnv())
    assert result.resource["metadata"]["annotations"] == {"a": "x", "b": "x"}
    broken = {"name": "broken", "mutate": {"patchStrategicMerge": {"metadata": {"labels": {"x": "$(../nope)"}}}}}
    outcome = mutate_rules(policy(broken).mutate_rules, request(memory_pod("1Gi")), RuleEnv()).results[0]
    assert outcome.outcome == "error" and "$(../nope)" in outcome.message


@pytest.mark.parametrize("rule, where", [
    ({"validate": {"message": "see $(../x)", "pattern": {"a": "1"}}}, "validate.message"),
    ({"validate": {"deny": {"conditions": {"all": [{"key": "$(/x)", "operator": "Equals", "value": 1}]}}}},
     "validate.deny.conditions.all[0].key"),
    ({"preconditions": {"all": [{"key": "a", "operator": "Equals", "value": "$(x)"}]},
      "validate": {"pattern": {"a": "1"}}}, "preconditions.all[0].value"),
    ({"context": [{"name": "v", "variable": {"value": "$(x)"}}], "validate": {"pattern": {"a": "1"}}},
     "context[0].variable.value"),
    ({"generate": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "namespace": "n",
                   "data": {"data": {"k": "$(../x)"}}}}, "generate.data.data.k"),
])
def test_references_elsewhere_are_refused_naming_rule_and_field(rule, where):
    with pytest.raises(PolicyError, match=r"rule r: \$\(\.\.\.\) references .*" + where.replace("[", r"\[")
                       .replace("]", r"\]").replace(".", r"\.")):
        policy({"name": "r", **rule})


def test_go_path_join():
    assert go_path_join("/a/b/c", "./../../d") == "/a/d"
    assert go_path_join("/a", "../../../x") == "/x"
    assert go_path_join("", "x") == "x"
    assert go_path_join("/a//b/", ".") == "/a/b"


def test_kyverno_test_suite_through_quartermaster_test():
    import io
    from argparse import Namespace

    from tests.support import REPO
    from webhook.testsuite.command import run_test_command
    out, err = io.StringIO(), io.StringIO()
    suite = REPO / "tests" / "families" / "kyverno" / "fixtures" / "references"
    code = run_test_command(Namespace(paths=[str(suite)], detailed_results=True, output="table", fail_only=False), out, err)
    assert code == 0, out.getvalue() + err.getvalue()
    assert out.getvalue().strip().endswith("7 passed, 0 failed")


def test_convert_translates_the_resolved_pattern_and_refuses_broken_references():
    from webhook.families.kyverno.convert import convert_document

    def document(tier):
        pattern = {"metadata": {"labels": {"app": "web", "tier": tier}}}
        return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "mem"},
                "spec": {"rules": [{"name": "mem", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                                    "validate": {"message": "m", "pattern": pattern}}]}}
    converted = convert_document(document("$(../app)"))
    assert not converted.refused and "$(" not in str(converted.documents)
    assert converted.documents[0]["spec"]["validations"][0]["expression"].count('"web"') == 2
    refused = convert_document(document("$(../nope)"))
    assert not refused.documents and "does not resolve" in refused.refused[0]
