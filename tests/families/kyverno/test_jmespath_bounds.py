"""Kyverno JMESPath functions on hostile request data: bounded work and size, errors not exceptions. Each bound is
a count (characters, matches, steps, levels), asserted by the error naming it; no assertion reads the clock."""

import pytest

from webhook.families.kyverno.jmespath_functions import query
from webhook.families.kyverno.jp_errors import MAX_TEXT, JMESPathError
from webhook.families.kyverno.jp_budget import MAX_DEPTH, MAX_STEPS

BIG = {"s": "a" * 2_000_000, "small": "a" * 50_000, "n": 1e308}


def outcome(expression: str, data: dict = BIG):
    try:
        return query(expression, data)
    except JMESPathError as exc:
        return exc


@pytest.mark.parametrize("expression, limit", [
    ("replace_all(small, 'a', small)", f"more than {MAX_TEXT} characters"),  # 2.5 GB built on the event loop
    ("replace(small, 'a', small, `-1`)", f"more than {MAX_TEXT} characters"),
    ("regex_replace_all('a', small, small)", f"more than {MAX_TEXT} characters"),
    ("regex_replace_all('(a)', small, '$1$1$1$1$1$1$1$1$1$1')", "more than 10000 matches"),
    ("regex_replace_all('a', s, 'b')", "more than 10000 matches"),  # 2M matches: 7 s in RE2's Python sub
    ("regex_replace_all_literal('a', s, 'b')", "more than 10000 matches"),
    ("random('[a-z]{1000000000}')", f"more than {MAX_TEXT} characters"),
    ("round(n, `100000000`)", "beyond a double"),  # 10 ** 1e8 took minutes
])
def test_growth_and_match_count_are_bounded(expression, limit):
    """Each is refused by a count checked before the work (the result's size, the matches so far, the digits)."""
    found = outcome(expression)
    assert isinstance(found, JMESPathError), type(found)
    assert limit in str(found), str(found)


@pytest.mark.parametrize("expression", ["round(n, `1`)", "regex_match(s, s)"])
def test_overflow_and_oversized_patterns_are_query_errors(expression):
    """OverflowError and re.error escaped query() as exceptions no caller expected."""
    assert isinstance(outcome(expression), JMESPathError)


def test_ordinary_replacements_are_unchanged():
    data = {"name": "My_App.v2", "image": "docker.io/nginx:1"}
    assert query("regex_replace_all('[^a-z0-9]', to_lower(name), '-')", data) == "my-app-v2"
    assert query("regex_replace_all('^([^/]+)/(.*)$', image, 'mirror.corp/$2')", data) == "mirror.corp/nginx:1"
    assert query("regex_replace_all_literal('\\.', name, '$1')", data) == "My_App$1v2"
    assert query("replace_all(name, '_', '')", data) == "MyApp.v2"
    assert len(query("regex_replace_all('b', s, 'c')", BIG)) == 2_000_000  # no match: no cost per match
    assert len(query("replace_all(s, 'a', 'bb')", BIG)) == 4_000_000 <= MAX_TEXT


def test_empty_matches_are_visited_as_go_visits_them():
    """Go's ReplaceAllString skips an empty match right where the previous match ended (Python's re and
    RE2's Python finditer keep it); the same rule as CEL's regex.replace and findAll (webhook.model.regex)."""
    data = {"s": "baaac"}
    assert query("regex_replace_all('a*', s, 'x')", data) == "xbxcx"
    assert query("regex_replace_all_literal('a*', s, 'x')", data) == "xbxcx"
    assert query("regex_replace_all('x*', s, '-')", data) == "-b-a-a-a-c-"


@pytest.mark.parametrize("pattern, template, expected", [
    # the examples of Go's regexp.Regexp.ReplaceAllString documentation, on "-ab-axxb-"
    ("a(x*)b", "T", "-T-T-"),
    ("a(x*)b", "$1", "--xx-"),
    ("a(x*)b", "$1W", "---"),  # the longest name: $1W is ${1W}, a group that does not exist
    ("a(x*)b", "${1}W", "-W-xxW-"),
    ("a(?P<1W>x*)b", "$1W", "--xx-"),  # ... which a named group can be
    ("a(?P<1W>x*)b", "${1}W", "-W-xxW-"),
    # the rest of Go's Regexp.Expand: $$, names, and a "$" that starts no name
    ("a(?P<xs>x*)b", "<$xs>", "-<>-<xx>-"),
    ("a(?P<xs>x*)b", "${xs}$$", "-$-xx$-"),
    ("a(x*)b", "$$1", "-$1-$1-"),
    ("a(x*)b", "$", "-$-$-"),
    ("a(x*)b", "${1", "-${1-${1-"),
    ("a(x*)b", "${}", "-${}-${}-"),
    ("a(x*)b", "$2|$01|$0", "-||ab-||axxb-"),  # out of range, a leading zero (a name), the whole match
    ("a(x)?(b)", "[$1$2]", "-[b]-axxb-"),  # a group that took no part is empty
    ("a(x*)b", "\\1\\$1", "-\\1\\-\\1\\xx-"),  # a backslash is text
])
def test_replacements_expand_as_go_expands_them(pattern, template, expected):
    data = {"s": "-ab-axxb-", "p": pattern, "t": template}
    assert query("regex_replace_all(p, s, t)", data) == expected


@pytest.mark.parametrize("expression", [
    " || ".join(["request.object.metadata.name"] * 3000),
    " | ".join(["@"] * 3000),
    "!" * 3000 + "a",
    "(" * 3000 + "a" + ")" * 3000,
])
def test_an_expression_nesting_too_deeply_is_an_error_not_a_recursion_error(expression):
    """A 3,000-deep expression failed at run time with RecursionError (an exception no caller expected)."""
    found = outcome(expression, {"a": 1, "request": {"object": {"metadata": {"name": "x"}}}})
    assert isinstance(found, JMESPathError), type(found)
    assert f"more than the limit of {MAX_DEPTH}" in str(found)


def test_function_calls_pay_for_the_size_of_their_arguments():
    """A function over a tenant's 1 MB annotation, once per element of a list the policy builds: each call is
    charged the size of its argument before it runs, and the query stops at its budget of steps."""
    data = {"metadata": {"annotations": {"note": "a" * 1_000_000}}}
    copies = ", ".join(["metadata.annotations.note"] * 50)
    found = outcome(f"[{copies}][*].to_upper(@) | length(@)", data)
    assert isinstance(found, JMESPathError), type(found)
    assert f"budget of {MAX_STEPS} steps" in str(found)
    assert outcome("[metadata.annotations.note][*].to_upper(@) | length(@)", data) == 1


def test_the_budget_is_per_query():
    data = {"metadata": {"annotations": {"note": "a" * 1_000_000}}}
    for _ in range(20):  # 20 queries of ~100,000 steps: more than one budget in all, none over its own
        assert outcome("to_upper(metadata.annotations.note) | length(@)", data) == 1_000_000
