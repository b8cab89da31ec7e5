"""Runaway expressions are CelErrors stopped by a budget (comprehension steps, the cost of library calls, the size
of what they build), on both backends; no assertion reads the clock."""

import pytest

from webhook.cel import CelError
from webhook.cel.compiler import MAX_BINDS

BIG = {"object": {"items": list(range(2000)), "text": "x" * 100_000}}


@pytest.mark.parametrize("expression", [
    "object.items.all(x, object.items.all(y, object.items.exists(z, z < 0) == false))",
    "object.items.map(x, object.items.map(y, y)).size() > 0",
    "object.items.filter(x, object.items.exists_one(y, y == x)).size() > 0",
])
def test_nested_comprehensions_over_big_lists_stop(cpp, expression):
    program = cpp.compile(expression)
    with pytest.raises(CelError, match="(?i)iteration budget|more than the limit"):
        program.evaluate(BIG)


def test_the_reference_backend_has_the_same_budget():
    """cel-python runs ~300 us per step: its 10,000-step budget, mirrored from the C++ runtime, is what stops it."""
    from webhook.cel import CelCompiler
    program = CelCompiler("cel-python").compile("object.items.map(x, object.items.map(y, y)).size() > 0")
    with pytest.raises(CelError, match="(?i)iteration budget"):
        program.evaluate(BIG)


def test_budget_does_not_touch_ordinary_lists(compiler):
    assert compiler.compile("object.items.all(x, x >= 0)")(BIG) is True


def test_string_growth_through_library_calls_is_bounded(compiler):
    program = compiler.compile("object.text.replace('x', 'xxxxxxxx').replace('x', 'xxxxxxxx').size()")
    with pytest.raises(CelError, match="more than the limit"):
        program.evaluate(BIG)
    with pytest.raises(CelError, match="more than the limit"):
        compiler.compile("object.items.map(x, object.text).join('')").evaluate({"object": {"items": list(range(40)), "text": "y" * 100_000}})


def test_doubling_through_bind_is_refused_at_compile_time(cpp):
    doubling = "cel.bind(a, object.text + object.text, " * (MAX_BINDS + 1) + "size(a)" + ")" * (MAX_BINDS + 1)
    with pytest.raises(CelError, match="cel.bind more than"):
        cpp.compile(doubling)


def test_long_range_is_refused(compiler):
    with pytest.raises(CelError, match="at most 10000"):
        compiler.compile("lists.range(100000000).size()").evaluate({})


def test_map_and_filter_ranges_are_capped(cpp):
    """The C++ runtime's map/filter is quadratic in the range; a long range is refused, a nested one stops fast."""
    with pytest.raises(CelError, match="map/filter over 5000 elements"):
        cpp.compile("object.items.filter(x, x > 1).size()").evaluate({"object": {"items": list(range(5000))}})
    program = cpp.compile("object.items.map(x, object.items.map(y, y)).size()")
    with pytest.raises(CelError, match="(?i)iteration budget"):
        program.evaluate({"object": {"items": list(range(1000))}})
    assert cpp.compile("object.items.map(x, x * 2).sum()").evaluate({"object": {"items": list(range(1000))}}) == 999000
