"""Condition operators and any/all blocks, as Kyverno's operator handlers compare values."""

import pytest

from webhook.families.kyverno.conditions import ConditionError, apply_operator, evaluate_conditions
from webhook.families.kyverno.variables import JsonContext


@pytest.mark.parametrize("op,key,value,expected", [
    ("equals", "1Gi", "1024Mi", True), ("equals", "foobar", "foo*", True), ("equals", "foo*", "foobar", False),
    ("equals", 1, "1", True), ("equals", {"a": 1}, {"a": 1}, True), ("notequals", "a", "b", True),
    ("equals", "1h", "60m", True), ("equals", "3600s", "1h", True), ("equals", 3600, "1h", False),
    ("anyin", "CREATE", ["CREATE", "UPDATE"], True), ("anyin", ["a", "z"], ["a", "b"], True),
    ("allin", ["a", "z"], ["a", "b"], False), ("allin", ["ab", "ac"], ["a*"], True),
    ("anynotin", ["a", "z"], ["a", "b"], True), ("allnotin", ["x", "z"], ["a", "b"], True),
    ("allnotin", ["a", "z"], ["a", "b"], False), ("anyin", 3, "1-5", True), ("anynotin", "NET_RAW", "[\"ALL\"]", True),
    ("in", "a", ["a", "b"], True), ("notin", "c", ["a", "b"], True),
    ("greaterthan", "2Gi", "1Gi", True), ("greaterthan", 3, "2", True), ("lessthan", "1h", "90m", True),
    ("greaterthanorequals", "1.2.0", "1.10.0", False), ("lessthan", 2.5, 3, True),
    ("durationgreaterthan", "2h", "90m", True), ("durationlessthanorequals", 60, "1m", True),
    # a key that resolved to null: Kyverno's Equals and NotEquals are both false (found by the differential:
    # `{{ element.path | split(@, '/') | [1] }}` NotEquals `data` on a hostPath `Pod` denied here, passed in Kyverno)
    ("equals", None, "data", False), ("notequals", None, "data", False), ("notequals", None, None, False),
    ("notequals", True, "true", True), ("notequals", 1, "2", True), ("notequals", [1], [1], False),
])
def test_operators(op, key, value, expected):
    assert apply_operator(op, key, value) is expected


CTX = JsonContext({"request": {"operation": "CREATE", "object": {"metadata": {"labels": {"app": "x"}}}}})


def test_any_and_all_blocks_with_messages():
    block = {"any": [{"key": "{{request.operation}}", "operator": "Equals", "value": "DELETE", "message": "no"},
                     {"key": "{{request.operation}}", "operator": "Equals", "value": "CREATE", "message": "yes"}],
             "all": [{"key": "{{request.object.metadata.labels.app}}", "operator": "Equals", "value": "x"}]}
    result = evaluate_conditions(block, CTX)
    assert result.passed and result.message == "yes"
    failing = evaluate_conditions({"all": [{"key": "a", "operator": "Equals", "value": "b", "message": "m"}]}, CTX)
    assert not failing.passed and failing.message == "m"


def test_legacy_list_of_conditions():
    assert evaluate_conditions([{"key": "{{request.operation}}", "operator": "In", "value": ["CREATE"]}], CTX).passed


def test_unknown_key_in_a_condition_is_an_error_but_defaults_work():
    with pytest.raises(ConditionError):
        evaluate_conditions({"all": [{"key": "{{request.object.metadata.labels.team}}", "operator": "Equals",
                                      "value": ""}]}, CTX)
    ok = {"all": [{"key": "{{request.object.metadata.labels.team || ''}}", "operator": "Equals", "value": ""}]}
    assert evaluate_conditions(ok, CTX).passed


def test_unknown_operator_is_an_error():
    with pytest.raises(ConditionError, match="unknown condition operator"):
        evaluate_conditions({"all": [{"key": "a", "operator": "Sorta", "value": "a"}]}, CTX)
