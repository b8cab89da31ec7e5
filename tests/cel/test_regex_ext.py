"""cel-go's regex extension (`regex.replace`, `regex.extract`, `regex.extractAll`): in Kyverno's environment only,
on both backends (`regex.extract` returns an optional: on the runtime that has optionals)."""

import pytest

from webhook.cel import CelError

CASES = [
    ("regex.replace('quay.io/app:1', '^quay\\\\.io/(.*)$', 'mirror.local/\\\\1')", "mirror.local/app:1"),
    ("regex.replace('a-b-c', '-', '+')", "a+b+c"),
    ("regex.replace('one two', '(\\\\w+) (\\\\w+)', '\\\\2 \\\\1')", "two one"),
    ("regex.replace('abab', 'a', 'z', 1)", "zbab"),
    ("regex.replace('abab', 'a', 'z', -5)", "zbzb"),
    ("regex.replace('abab', '(', 'z', 0)", "abab"),           # count 0: the pattern is never compiled
    ("regex.replace('tab', 'x*', '.')", ".t.a.b."),
    ("regex.replace('caaat', 'a*', '-')", "-c-t-"),            # Go skips the empty match after 'aaa'
    ("regex.replace('x', 'x', 'a\\\\\\\\b')", "a\\b"),          # an escaped backslash
    ("regex.replace('ab', '(a)(z)?b', '[\\\\2]')", "[]"),      # a group that did not take part is empty
    ("regex.extractAll('k=1, k=22, j=3', 'k=\\\\d+')", ["k=1", "k=22"]),
    ("regex.extractAll('k=1, k=22, j=3', 'k=(\\\\d+)')", ["1", "22"]),
    ("regex.extractAll('nothing', 'k=(\\\\d+)')", []),
]


@pytest.mark.parametrize("expression,expected", CASES)
def test_regex_extension(compiler, expression, expected):
    assert compiler.compile(expression, env="kyverno").evaluate({}) == expected


@pytest.mark.parametrize("expression,message", [
    ("regex.replace('ab', '(a)', '\\\\2')", "references group 2"),
    ("regex.replace('ab', 'a', 'x\\\\')", "not allowed at end"),
    ("regex.replace('ab', 'a', '\\\\q')", "must be followed by a digit"),
    ("regex.replace('ab', '(', 'x')", "invalid regular expression"),
    ("regex.extractAll('ab', '(a)(b)')", "more than one capturing group"),
])
def test_regex_extension_errors(compiler, expression, message):
    with pytest.raises(CelError, match=message):
        compiler.compile(expression, env="kyverno").evaluate({})


def test_not_in_the_kubernetes_environment(compiler):
    """The API server's CEL has no `regex` namespace: a ValidatingAdmissionPolicy using it does not compile."""
    with pytest.raises(CelError):
        compiler.compile("regex.replace('a', 'a', 'b')", env="admission")


@pytest.mark.parametrize("expression,expected", [
    ("regex.extract('k=12; k=3', 'k=(\\\\d+)').orValue('none')", "12"),
    ("regex.extract('k=12', '[a-z]=[0-9]').value()", "k=1"),
    ("regex.extract('K=12', 'k=(\\\\d+)').hasValue()", False),
    ("regex.extract('k=', 'k=(\\\\d*)').hasValue()", False),        # an empty group is none
    ("['a1', 'b'].map(s, regex.extract(s, '[0-9]').orValue('-'))", ["1", "-"]),
    ("regex.extract(regex.replace('a-b', '-', '='), '=(.)') == optional.of('b')", True),
    ("'regex.extract(x)' + regex.extract('a', 'a').orValue('')", "regex.extract(x)a"),  # strings stay as written
])
def test_regex_extract(cpp, expression, expected):
    assert cpp.compile(expression, env="kyverno").evaluate({}) == expected


def test_regex_extract_errors_and_the_reference_runtime(compiler):
    with pytest.raises(CelError, match="more than one capturing group" if compiler.backend == "cel-expr-python"
                       else "not supported by the cel-python backend"):
        compiler.compile("regex.extract('ab', '(a)(b)').orValue('')", env="kyverno").evaluate({})
