"""The rule-schema audit (docs/conformance.md, "Fields honoured / refused"): unknown fields and unimplemented
features are load errors naming the rule and the field; failure-action overrides follow Kyverno's precedence with
namespace selectors; reportProperties reach the PolicyReport result."""

import re

import pytest

from webhook.app import PolicyLoadFailed

from tests.families.kyverno.test_family import PRIVILEGED, pod
from tests.families.kyverno.test_rules import policy
from webhook.app import Quartermaster, Settings
from webhook.engine.offline import admit_offline
from webhook.families.kyverno.compile import PolicyError
from webhook.model.results import Action, Outcome
from webhook.reports.policyreport import result_entry
from webhook.reports.sink import ReportEntry, ResourceRef
from webhook.state.memory import InMemoryClusterState

PATTERN = {"pattern": {"metadata": {"name": "?*"}}}


@pytest.mark.parametrize("rule, field", [
    ({"validate": {"patern": {"a": "1"}, "message": "typo"}}, "validate.patern"),
    ({"validate": PATTERN, "match": {"any": [{"resources": {"kind": ["Pod"]}}]}}, "match.any[0].resources.kind"),
    ({"validate": PATTERN, "context": [{"name": "c", "configmap": {"name": "x"}}]}, "context[0].configmap"),
    ({"validate": PATTERN, "context": [{"name": "c", "apiCall": {"urlPath": "/x", "jmespath": "a"}}]},
     "context[0].apiCall.jmespath"),
    ({"validate": {"foreach": [{"list": "request.object.spec.containers", "patern": {"a": "1"}}]}},
     "validate.foreach[0].patern"),
    ({"mutate": {"foreach": [{"list": "x", "patchStrategicMerge": {"a": 1}, "elementScope": True}]}},
     "mutate.foreach[0].elementScope"),
    ({"validate": PATTERN, "exlude": {"any": []}}, "exlude"),
])
def test_unknown_fields_are_refused_naming_rule_and_field(rule, field):
    with pytest.raises(PolicyError, match=r"rule r: unknown field\(s\) " + re.escape(field)):
        policy({"name": "r", **rule})


@pytest.mark.parametrize("rule, feature", [
    ({"validate": PATTERN, "imageExtractors": {"Task": [{"path": "/spec/image"}]}}, "imageExtractors"),
    ({"mutate": {"mutateExistingOnPolicyUpdate": True, "patchStrategicMerge": {"a": 1}}},
     "mutate.mutateExistingOnPolicyUpdate"),
    ({"generate": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "namespace": "n",
                   "foreach": [{"list": "x"}]}}, "generate.foreach"),
])
def test_unimplemented_features_are_refused(rule, feature):
    with pytest.raises(PolicyError, match=rf"rule r: {feature} .*not supported"):
        policy({"name": "r", **rule})


def test_honoured_fields_load():
    rule = {"name": "r", "skipBackgroundRequests": True, "reportProperties": {"team": "platform"},
            "validate": {**PATTERN, "allowExistingViolations": True, "failureAction": "Audit",
                         "failureActionOverrides": [{"action": "Enforce", "namespaces": ["prod-*"]}]}}
    assert policy(rule).rules[0].head.name == "r"


def build(tmp_path, text: str) -> Quartermaster:
    directory = tmp_path / "policies"
    directory.mkdir(exist_ok=True)
    (directory / "policy.yaml").write_text(text)
    state = InMemoryClusterState([
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {"tier": "gold"}}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}])
    qm = Quartermaster.build(Settings(policies=directory), state=state)
    qm.load_policies()
    return qm


NAMED = """  rules:
  - name: named
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      message: must be named
{rule_fields}      pattern: {metadata: {name: "?*"}}"""


async def _action(tmp_path, spec_fields: str, rule_fields: str, namespace: str) -> Action:
    text = PRIVILEGED.replace("{action}", "Audit").split("  rules:")[0] + spec_fields + NAMED.replace(
        "{rule_fields}", rule_fields)
    qm = build(tmp_path, text)   # team-a carries the label tier=gold
    result = await admit_offline(qm.engine, pod(name="", namespace=namespace))
    (row,) = [r for r in result.results if r.rule == "named"]
    assert row.outcome is Outcome.FAIL
    return row.action


async def test_rule_overrides_win_over_rule_action_then_spec_overrides(tmp_path):
    rule_override = "      failureActionOverrides: [{action: Enforce, namespaces: [team-*]}]\n"
    assert await _action(tmp_path, "", rule_override, "team-a") is Action.ENFORCE
    assert await _action(tmp_path, "", rule_override, "other") is Action.AUDIT
    # an explicit rule failureAction beats the spec-level overrides
    spec_override = "  validationFailureActionOverrides: [{action: Enforce, namespaces: [team-*]}]\n"
    assert await _action(tmp_path, spec_override, "      failureAction: Audit\n", "team-a") is Action.AUDIT
    assert await _action(tmp_path, spec_override, "", "team-a") is Action.ENFORCE


async def test_override_namespace_selector_and_no_namespaces(tmp_path):
    selector = "  validationFailureActionOverrides: [{action: Enforce, namespaceSelector: {matchLabels: {tier: gold}}}]\n"
    assert await _action(tmp_path, selector, "", "team-a") is Action.ENFORCE      # team-a is tier=gold
    assert await _action(tmp_path, selector, "", "other") is Action.AUDIT
    everywhere = "  validationFailureActionOverrides: [{action: enforce}]\n"
    assert await _action(tmp_path, everywhere, "", "other") is Action.ENFORCE
    # an action outside Kyverno's enum is refused at load, as the API server refuses it through the CRD's schema
    invalid = "  validationFailureActionOverrides: [{action: Block}, {action: Enforce, namespaces: [other]}]\n"
    with pytest.raises(PolicyLoadFailed, match=r"validationFailureActionOverrides\[0\]\.action: 'Block'"):
        await _action(tmp_path, invalid, "", "other")


async def test_report_properties_reach_the_policy_report(tmp_path):
    text = PRIVILEGED.replace("{action}", "Audit").replace(
        "    validate:", "    reportProperties: {team: platform, ticket: SEC-1}\n    validate:", 1)
    qm = build(tmp_path, text)
    result = await admit_offline(qm.engine, pod(privileged=True))
    (row,) = result.results
    assert dict(row.properties) == {"team": "platform", "ticket": "SEC-1"}
    entry = result_entry(ReportEntry(ResourceRef("v1", "Pod", "team-a", "p", "uid-1"), row, 1.0))
    assert entry["properties"] == {"team": "platform", "ticket": "SEC-1", "mode": "Audit",
                                   "policyKind": "ClusterPolicy"}
