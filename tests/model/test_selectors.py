import pytest

from webhook.model.selectors import parse_selector


def test_selector_semantics():
    sel = parse_selector({"matchLabels": {"a": "1"}, "matchExpressions": [
        {"key": "b", "operator": "In", "values": ["x", "y"]},
        {"key": "c", "operator": "DoesNotExist"},
        {"key": "d", "operator": "NotIn", "values": ["no"]},
    ]})
    assert sel.matches({"a": "1", "b": "x"})
    assert sel.matches({"a": "1", "b": "y", "d": "yes"})
    assert not sel.matches({"a": "1", "b": "z"})
    assert not sel.matches({"a": "1", "b": "x", "c": ""})
    assert not sel.matches({"a": "1", "b": "x", "d": "no"})
    assert not sel.matches(None)


def test_empty_matches_everything():
    assert parse_selector(None).matches({}) and parse_selector({}).matches({"x": "y"})


def test_bad_operator():
    with pytest.raises(ValueError, match="operator"):
        parse_selector({"matchExpressions": [{"key": "a", "operator": "Has"}]})
