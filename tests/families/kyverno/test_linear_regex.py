"""Regular expressions and wildcards run in linear time, as in Go (Kyverno) and RE2 (Kubernetes' CEL).
Python's `re` backtracked: a pod named forty `a` and a `!` held the event loop for minutes under a policy
calling regex_match('^(a+)+$', name); a wildcard of six `*` against a 120-character name took 175 s."""

import re

import jmespath
import pytest

from tests.work import ends_in_a_child
from webhook.cel.lib_lists import find, find_all
from webhook.families.kyverno.gotypes import wildcard_match
from webhook.families.kyverno.jmespath_functions import KyvernoFunctions


def _query(expression: str, data: dict):
    return jmespath.search(expression, data, options=jmespath.Options(custom_functions=KyvernoFunctions()))


# Sixty characters: a backtracking engine would run for longer than the universe has existed, a linear one
# answers at once. In a child process, because a backtracking C engine holds the GIL: the hang guard there
# fails the test instead of holding the run.
BACKTRACKING = """
import jmespath
from webhook.cel.lib_lists import find, find_all
from webhook.families.kyverno.gotypes import wildcard_match
from webhook.families.kyverno.jmespath_functions import KyvernoFunctions

def query(expression, data):
    return jmespath.search(expression, data, options=jmespath.Options(custom_functions=KyvernoFunctions()))

assert query("regex_match('^(a+)+$', name)", {"name": "a" * 60 + "!"}) is False
assert query("regex_match(pattern, name)", {"pattern": "^(a|a)*$", "name": "a" * 60 + "!"}) is False
assert wildcard_match("*a" * 20 + "*b", "a" * 240 + "c") is False
assert find("a" * 60 + "!", "^(a+)+$") == "" and find_all("a" * 60 + "!", "(a*)*b") == []
print("answered")
"""


def test_backtracking_patterns_and_wildcards_answer_at_once():
    child = ends_in_a_child(BACKTRACKING)
    assert child.returncode == 0 and child.stdout.strip() == "answered", child.stderr


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
