"""The one reader of Kyverno CLI values (webhook/policy/cli_values.py), for `test` suites and `apply -f/--set`."""

from __future__ import annotations

import pytest

from webhook.policy.cli_values import Values, ValuesError, parse_set, read_values_file

VALUES = {
    "apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Value",
    "globalValues": {"tier": "open", "zone": "a"},
    "policies": [{"name": "p", "rules": [{"name": "r", "values": {"tier": "rule"}, "foreachValues": {"x": [1, 2]}}],
                  "resources": [{"name": "web", "values": {"tier": "web"}}]}],
    "namespaceSelector": [{"name": "team-a", "labels": {"env": "prod"}}],
}


def test_precedence_global_then_rule_then_resource_then_set():
    values = Values.parse(VALUES)
    assert values.values_for("p", "batch") == {"tier": "open", "zone": "a"}
    assert values.values_for("p", "batch", "r")["tier"] == "rule"
    assert values.values_for("p", "web", "r")["tier"] == "web"
    assert values.values_for("other", "web", "r")["tier"] == "open"
    assert values.foreach_values_for("p", "r") == {"x": [1, 2]}
    assert values.with_variables({"tier": "set"}).values_for("p", "web", "r") == {"tier": "set", "zone": "a"}


def test_namespaces_and_operation():
    values = Values.parse({**VALUES, "globalValues": {"request.operation": "update"}})
    assert values.namespace_objects() == [{"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": "team-a", "labels": {"env": "prod"}}}]
    assert values.operation == "UPDATE"
    assert values.with_variables({"request.operation": "delete"}).operation == "DELETE"


def test_field_names_match_case_insensitively_as_go_decodes_them():
    assert Values.parse({"GlobalValues": {"a": 1}, "kind": "Values"}).global_values == {"a": 1}


@pytest.mark.parametrize("raw, message", [
    ([], "v.yaml: a values file must be a mapping (kind: Value), got list"),
    ({"kind": "Pod"}, "v.yaml: kind: 'Pod' is not a Kyverno values file"),
    ({"globalValues": "a=b"}, "v.yaml: globalValues: must be a mapping, got str"),
    ({"policies": {"name": "p"}}, "v.yaml: policies: must be a list, got dict"),
    ({"policies": [{"name": "p", "resources": [{"values": {}}]}]}, "v.yaml: policies[0].resources[0].name: a name is required"),
    ({"policies": [{"name": "p", "rules": [{"name": "r", "foreachValues": {"x": 1}}]}]},
     "v.yaml: policies[0].rules[0].foreachValues.x: must be a list"),
    ({"namespaceSelector": [{"name": "a", "labels": ["x"]}]}, "v.yaml: namespaceSelector[0].labels: must be a mapping"),
    ({"namespaces": [{"kind": "Namespace"}]}, "v.yaml: namespaces[0].metadata.name: a Namespace object with a name"),
    ({"subresources": [{"subresource": {"name": "pods"}}]}, "v.yaml: subresources[0]: needs subresource.name"),
])
def test_a_malformed_value_names_the_file_and_the_field(raw, message):
    with pytest.raises(ValuesError) as error:
        Values.parse(raw, "v.yaml")
    assert str(error.value).startswith(message)


def test_a_values_file_that_cannot_be_read_says_where(tmp_path):
    broken = tmp_path / "values.yaml"
    broken.write_text("kind: Value\nglobalValues:\n  a: [1\n")
    with pytest.raises(ValuesError, match=rf"^{broken}:4: invalid YAML"):
        read_values_file(broken)
    with pytest.raises(ValuesError, match="cannot read"):
        read_values_file(tmp_path / "absent.yaml")


def test_set_takes_comma_separated_pairs_and_refuses_a_pair_without_equals():
    assert parse_set(["request.operation=UPDATE,tier = frozen", "a=b=c"]) == {
        "request.operation": "UPDATE", "tier": "frozen", "a": "b=c"}
    for bad in ("tier", "=x", "a=1,b"):
        with pytest.raises(ValuesError, match="expected key=value"):
            parse_set([bad])
