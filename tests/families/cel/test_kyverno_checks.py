"""Kyverno's own checks of its CEL policy kinds (pkg/cel/policies/*/validate.go): what it refuses when the policy
is applied does not load here, with its words; Kyverno's chainsaw `mutating-policies/existing/
reject-all-modes-disabled` expects the refusal."""

from __future__ import annotations

import pytest

from tests.families.cel.test_family import TEMPLATE, compile_

MATCH = "matchConstraints: {resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}]}"
BODIES = {"ValidatingPolicy": 'validations: [{expression: "EXPR"}]',
          "MutatingPolicy": 'mutations: [{patchType: JSONPatch, jsonPatch: {expression: "EXPR ? [] : []"}}]',
          "GeneratingPolicy": 'generate: [{expression: "EXPR"}]'}


def load_error(kind: str, namespace: str = "", match: str = MATCH, expr: str = "true", extra: str = "") -> str | None:
    meta = f"{{name: p, namespace: {namespace}}}" if namespace else "{name: p}"
    text = (f"apiVersion: policies.kyverno.io/v1\nkind: {'Namespaced' if namespace else ''}{kind}\nmetadata: {meta}\n"
            f"spec:\n  {match}\n  {BODIES[kind].replace('EXPR', expr)}\n" + (f"  {extra}\n" if extra else ""))
    result = compile_(text)
    assert not result.errors, result.errors
    [policy] = result.policies
    return policy.error


@pytest.mark.parametrize("kind", sorted(BODIES))
def test_a_policy_without_resource_rules_does_not_load(kind):
    for match in ("matchConstraints: {resourceRules: []}", "matchConstraints: {}"):
        error = load_error(kind, match=match)
        assert error and "spec.matchConstraints: a matchConstraints with at least one resource rule is required" in error
    assert load_error(kind) is None


def test_a_json_payload_policy_needs_no_resource_rules():
    assert load_error("ValidatingPolicy", match="evaluation: {mode: JSON}") is None


@pytest.mark.parametrize("kind", sorted(BODIES))
@pytest.mark.parametrize("expr, forbidden", [("globalContext.Get('deployments', '') != null", "globalContext"),
                                             ("http.Get('https://example.org') != null", "http")])
def test_a_namespaced_policy_may_not_use_global_context_or_http(kind, expr, forbidden):
    error = load_error(kind, namespace="team-a", expr=expr)
    assert error and f"spec: {forbidden}.* is not allowed in namespaced policies" in error
    assert load_error(kind, expr=expr) is None  # a cluster policy may (where lookups are answered)


@pytest.mark.parametrize("expr", ["object.metadata.name != 'http.example'", "has(object.spec.http)",
                                  "object.metadata.?globalContext.orValue('') == ''"])
def test_a_field_or_a_string_of_the_same_name_is_no_use(expr):
    assert load_error("ValidatingPolicy", namespace="team-a", expr=expr) is None


def test_a_mutating_policy_must_run_somewhere():
    off = "evaluation: {admission: {enabled: false}, mutateExisting: {enabled: false}}"
    error = load_error("MutatingPolicy", extra=off)
    assert error and "spec.evaluation: disabling both admission and mutateExisting evaluation modes is not allowed" in error
    assert load_error("MutatingPolicy", extra="evaluation: {admission: {enabled: false}, mutateExisting: {enabled: true}}") is None
    assert load_error("MutatingPolicy", extra="evaluation: {admission: {enabled: true}}") is None


def test_a_template_interpolation_counts_as_an_expression():
    """The check reads what the compile compiled, so an interpolation in a generate template is held to it too."""
    text = (TEMPLATE.replace("kind: GeneratingPolicy", "kind: NamespacedGeneratingPolicy")
            .replace("metadata: {name: team-config}", "metadata: {name: team-config, namespace: team-a}")
            .replace("labels: (( variables.labels ))", "labels: (( globalContext.Get('team-labels', '') ))"))
    assert "globalContext" in text and "Namespaced" in text
    [policy] = compile_(text).policies
    assert policy.error and "spec: globalContext.* is not allowed in namespaced policies" in policy.error
