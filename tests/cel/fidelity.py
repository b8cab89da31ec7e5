"""The two checks every fidelity table runs: an expression's value (and its CEL type, as Python's), or the
error it must raise."""

import pytest

from webhook.cel import CelError
from tests.cel.test_libraries import compile_or_skip


def assert_value(compiler, expression, expected):
    result = compile_or_skip(compiler, expression).evaluate({})
    assert result == expected and type(result) is type(expected)


def assert_error(compiler, expression, message):
    program = compile_or_skip(compiler, expression)
    with pytest.raises(CelError, match=message):
        program.evaluate({})
