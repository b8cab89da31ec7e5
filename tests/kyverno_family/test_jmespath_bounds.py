"""Kyverno JMESPath functions on hostile request data: bounded work and size, errors not exceptions."""

import time

import pytest

from webhook.families.kyverno.jmespath_functions import MAX_TEXT, JMESPathError, query

BIG = {"s": "a" * 2_000_000, "small": "a" * 50_000, "n": 1e308}


def timed(expression: str, data: dict = BIG):
    started = time.perf_counter()
    try:
        return query(expression, data), time.perf_counter() - started
    except JMESPathError as exc:
        return exc, time.perf_counter() - started


@pytest.mark.parametrize("expression", [
    "replace_all(small, 'a', small)",              # 2.5 GB built on the event loop
    "replace(small, 'a', small, `-1`)",
    "regex_replace_all('a', small, small)",
    "regex_replace_all('(a)', small, '$1$1$1$1$1$1$1$1$1$1')",
    "regex_replace_all('a', s, 'b')",              # 2M matches: 7 s in RE2's Python sub
    "regex_replace_all_literal('a', s, 'b')",
    "random('[a-z]{1000000000}')",
    "round(n, `100000000`)",                       # 10 ** 1e8 took minutes
])
def test_growth_and_match_count_are_bounded(expression):
    outcome, seconds = timed(expression)
    assert isinstance(outcome, JMESPathError), type(outcome)
    assert seconds < 0.5, f"{expression} took {seconds:.2f}s"


@pytest.mark.parametrize("expression", ["round(n, `1`)", "regex_match(s, s)"])
def test_overflow_and_oversized_patterns_are_query_errors(expression):
    """OverflowError and re.error escaped query() as exceptions no caller expected."""
    outcome, _ = timed(expression)
    assert isinstance(outcome, JMESPathError)


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
