"""The two checks every fidelity table runs: an expression's value (and its CEL type, as Python's), or the
error it must raise."""

import pytest

from webhook.cel import CelError
from tests.cel.test_libraries import compile_or_skip


def assert_value(compiler, expression, expected):
    result = compile_or_skip(compiler, expression).evaluate({})
    assert result == expected and type(result) is type(expected)


def assert_error(compiler, expression, message):
    """At run time, or at compile time where Kubernetes checks a constant argument then (format strings, regexes)."""
    with pytest.raises(CelError, match=message):
        compile_or_skip(compiler, expression).evaluate({})
