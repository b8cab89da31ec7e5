"""Regular expressions and wildcards run in linear time, as in Go (Kyverno) and RE2 (Kubernetes' CEL).
Python's `re` backtracked: a pod named forty `a` and a `!` held the event loop for minutes under a policy
calling regex_match('^(a+)+$', name); a wildcard of six `*` against a 120-character name took 175 s."""

import re
import time

import jmespath
import pytest

from webhook.cel.lib_lists import find, find_all
from webhook.families.kyverno.gotypes import wildcard_match
from webhook.families.kyverno.jmespath_functions import KyvernoFunctions


def _query(expression: str, data: dict):
    return jmespath.search(expression, data, options=jmespath.Options(custom_functions=KyvernoFunctions()))


def test_backtracking_patterns_and_wildcards_answer_at_once():
    started = time.perf_counter()
    assert _query("regex_match('^(a+)+$', name)", {"name": "a" * 25 + "!"}) is False
    assert _query("regex_match(pattern, 'aaaaaaaaaaaaaaaaaaaaaaaaa!')", {"pattern": "^(a|a)*$"}) is False
    assert wildcard_match("*a" * 5 + "*b", "a" * 100 + "c") is False
    assert find("a" * 25 + "!", "^(a+)+$") == "" and find_all("a" * 25 + "!", "(a*)*b") == []
    assert time.perf_counter() - started < 0.5  # were seconds each (minutes at forty characters)


def test_go_semantics_are_kept():
    assert _query("regex_match('^[a-z]+\\z', 'abc')", {}) is True
    assert _query("regex_replace_all('(\\w+)@(\\w+)', 'jdoe@cern', '${2}/$1')", {}) == "cern/jdoe"
    assert _query("regex_replace_all_literal('a.', 'abacad', '$1')", {}) == "$1$1$1"
    assert wildcard_match("nvidia.com/mig-*", "nvidia.com/mig-1g.10gb") and not wildcard_match("a?c", "a\nbc")
    assert wildcard_match("*", "line\nbreak") and wildcard_match("a?c", "a\nc")
    assert find("abc123", "[0-9]+") == "123" and find_all("a1b22", "[0-9]+", 1) == ["1"]


def test_patterns_go_refuses_are_errors_not_hangs():
    with pytest.raises(Exception) as info:  # a backreference: Go's regexp has none either
        _query("regex_match('(a)\\1', 'aa')", {})
    assert isinstance(info.value, (re.error, ValueError)) or "regex" in str(info.value).lower()
    with pytest.raises(ValueError, match="invalid regular expression"):
        find("x", "(")
