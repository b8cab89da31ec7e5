"""Validation patterns: anchors and value operators, with the pass/fail/skip/error Kyverno reports."""

import pytest

from webhook.families.kyverno.pattern import match_pattern
from webhook.families.kyverno.pattern_values import validate_value

POD = {
    "metadata": {"name": "p", "labels": {"app": "web", "tier": "front"}},
    "spec": {
        "hostNetwork": False,
        "containers": [
            {"name": "a", "image": "nginx:1.25", "securityContext": {"privileged": False},
             "resources": {"limits": {"memory": "1Gi", "cpu": "500m"}}},
            {"name": "b", "image": "busybox:latest", "resources": {"limits": {"memory": "3Gi"}}},
        ],
    },
}


@pytest.mark.parametrize("value,pattern,expected", [
    ("nginx:1.25", "nginx:*", True), ("nginx", "!nginx", False), ("abc", "a?c", True),
    (5, ">3", True), (5, "<=4", False), ("2Gi", "<= 2048Mi", True), ("1500m", ">1", True),
    ("30s", "<1m", True), ("2h", ">=90m", True), (4, "1-5", True), (7, "1!-5", True), (3, "1!-5", False),
    ("a", "a | b", True), ("c", "a | b", False), (3, ">1 & <5", True), (None, None, True), ("", None, True),
    (0, None, True), (True, True, True), ("1", 1, True), (1.0, 1, True), ("x", "?*", True), ("", "?*", False),
])
def test_value_operators(value, pattern, expected):
    assert validate_value(value, pattern) is expected


def test_plain_pattern_passes_and_fails_with_path():
    assert match_pattern(POD, {"spec": {"containers": [{"image": "*:*"}]}}).status == "pass"
    result = match_pattern(POD, {"spec": {"containers": [{"image": "!*:latest"}]}})
    assert result.status == "fail" and result.path == "/spec/containers/1/image/"


def test_condition_anchor_skips_when_it_does_not_hold():
    pattern = {"metadata": {"labels": {"(app)": "db"}}, "spec": {"hostNetwork": True}}
    assert match_pattern(POD, pattern).status == "skip"


def test_condition_anchor_in_list_applies_to_matching_elements_only():
    pattern = {"spec": {"containers": [{"(image)": "*:latest", "resources": {"limits": {"memory": "<=2Gi"}}}]}}
    assert match_pattern(POD, pattern).status == "fail"
    pattern = {"spec": {"containers": [{"(image)": "*:latest", "resources": {"limits": {"memory": "<=4Gi"}}}]}}
    assert match_pattern(POD, pattern).status == "pass"


def test_equality_anchor_checks_only_present_keys():
    assert match_pattern(POD, {"spec": {"=(hostPID)": False, "=(hostNetwork)": False}}).status == "pass"
    assert match_pattern(POD, {"spec": {"=(hostNetwork)": True}}).status == "fail"


def test_negation_anchor_fails_when_key_present():
    assert match_pattern(POD, {"spec": {"X(hostPID)": "null"}}).status == "pass"
    assert match_pattern(POD, {"spec": {"X(hostNetwork)": "null"}}).status == "fail"


def test_existence_anchor_needs_one_matching_element():
    assert match_pattern(POD, {"spec": {"^(containers)": [{"image": "busybox*"}]}}).status == "pass"
    assert match_pattern(POD, {"spec": {"^(containers)": [{"image": "redis*"}]}}).status == "fail"


def test_global_anchor_skips_the_whole_pattern():
    pattern = {"spec": {"containers": [{"<(image)": "redis*"}], "hostNetwork": True}}
    assert match_pattern(POD, pattern).status == "skip"


def test_wildcard_keys_in_labels_are_expanded():
    assert match_pattern(POD, {"metadata": {"labels": {"ti*": "front"}}}).status == "pass"
    assert match_pattern(POD, {"metadata": {"labels": {"ti*": "back"}}}).status == "fail"


def test_existence_anchor_on_a_map_fails():
    assert match_pattern(POD, {"^(metadata)": [{"name": "p"}]}).status == "fail"


def test_star_requires_presence():
    assert match_pattern(POD, {"metadata": {"name": "*"}}).status == "pass"
    assert match_pattern(POD, {"metadata": {"namespace": "*"}}).status == "fail"


LITERAL_CANDIDATES = [
    "nginx", "c17", "web-5d4f8-x2x7q", "nginx:1.25", "Always", "IfNotPresent", "true", "false", "null",
    "kube-system", "ǅungla", "Infinity", "nan", "NaN", "inf", "abc ", "abc\n", "abc\t", " abc", "a|b", "a | b",
    "ab&cd", "ab*", "a?c", "Ki", "Mi", "m", "k", "u", "E", "e3", "E-2", "e+10", "Ei", "Kix", "ms", "µs", "h1",
    "x1-5", "x1!-5", "!abc", ">abc", "<=abc", "1Gi", "1024Mi", "0", "30s", "-abc", "+abc", ".abc", "_abc", "ab",
]


@pytest.mark.parametrize("pattern", LITERAL_CANDIDATES)
def test_literal_patterns_compare_as_the_full_reading_does(pattern, monkeypatch):
    """The fast path (text that stands for itself) answers as the operator, duration, quantity and wildcard
    reading does, for each value: equal, different, and the forms that read as the same quantity or duration."""
    from webhook.families.kyverno import pattern_values

    values = LITERAL_CANDIDATES + [pattern, pattern.strip(), pattern + "x", pattern.upper(), "", "0", "1", "1.0", "1000", "0.01", "1e3"]
    fast = [pattern_values._string_pattern_matches(v, pattern) for v in values]
    monkeypatch.setattr(pattern_values, "literal_pattern", lambda _: False)
    assert fast == [pattern_values._string_pattern_matches(v, pattern) for v in values]


def test_names_images_and_words_take_the_literal_path_and_operators_do_not():
    from webhook.families.kyverno.pattern_values import literal_pattern

    assert all(map(literal_pattern, ["nginx", "c17", "web-5d4f8-x2x7q", "nginx:1.25", "Always", "kube-system"]))
    assert not any(map(literal_pattern, ["Ki", "e3", "E-2", "e5-app", "a|b", "ab*", "a?c", "abc ", "!abc",
                                         "1Gi", "30s", "-abc", "ab"]))
