from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from tests.work import lines_run, peak_allocated
from webhook.model.quantity import (MAX_TEXT, MAX_VALUE, QuantityError, QuantityRangeError, format_bytes,
                                    parse_quantity)

# Any quantity, hostile or not, is parsed in a few hundred lines and a few kilobytes (about 150 lines and
# 2 KiB at most). Without the range checks that run before any arithmetic, 1e99999999 builds a number of
# 330 million bits: megabytes held and minutes of big-integer work.
MAX_LINES = 1_000
MAX_BYTES = 64 * 1024


def _bounded(value) -> None:
    lines = lines_run(lambda: parse_quantity(value))
    held = peak_allocated(lambda: parse_quantity(value))
    assert lines < MAX_LINES and held < MAX_BYTES, (value, lines, held)


@pytest.mark.parametrize("text, value", [
    ("30Gi", 30 * 2**30), ("1Ti", 2**40), ("500m", Fraction(1, 2)), ("1", 1), ("1e3", 1000), ("1.5Gi", 3 * 2**29),
    ("10G", 10**10), (2, 2), ("0.5", Fraction(1, 2)), ("1E", 10**18), ("1e+5", 10**5), ("1.G", 10**9),
    ("+1", 1), ("-1", -1), (" 2 ", 2), (1.5, Fraction(3, 2)), (0.1, Fraction(1, 10)),
])
def test_parse(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["Gi", "e5", "+", "-", ".", "000", "0.0e9"])
def test_scans_as_zero_like_the_api_server(text):
    """parseQuantityString returns zero for an empty number before a valid suffix."""
    assert parse_quantity(text) == 0


@pytest.mark.parametrize("text, value", [
    ("0.5n", Fraction(1, 10**9)), ("1e-99999999", Fraction(1, 10**9)), ("-1e-30", -Fraction(1, 10**9)),
    ("1.0000000001", 1 + Fraction(1, 10**9)), ("0.000000000000000000000000001Ki", Fraction(1, 10**9)),
])
def test_rounds_away_from_zero_to_a_nano(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["8Ei", "16Ei", "99999999999999999999999Ki"])
def test_binary_si_is_capped_like_the_api_server(text):
    assert parse_quantity(text) == MAX_VALUE


@pytest.mark.parametrize("value", ["1e99999999", "1e999999", "9223372036854775808", "1e19", "-1e19", "10E", 1e300, 2**64,
                                   float("inf"), "1" * (MAX_TEXT + 1)])
def test_out_of_range_is_a_range_error(value):
    with pytest.raises(QuantityRangeError):
        parse_quantity(value)
    _bounded(value)


@pytest.mark.parametrize("bad", ["", "1GB", "abc", "1 Gi", True, "1e", "1Ki5", "1.1.M", "0.1mi", "-3.01e-", "1e9223372036854775808",
                                 "Non-Numeric", None, [], "1e5e",
                                 "\u0661Gi", "1\u0663", "1e\u0663", "\uff11"])  # Arabic-Indic, fullwidth digits: Go reads ASCII ones
def test_parse_rejects(bad):
    with pytest.raises(QuantityError):
        parse_quantity(bad)


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet="0123456789.+-eEinumkKMGTPi ", max_size=MAX_TEXT + 5))
def test_any_text_parses_or_refuses_within_bounded_work(text):
    _bounded(text)
    try:
        value = parse_quantity(text)
    except QuantityError:
        return
    assert abs(value) <= MAX_VALUE and (value * 10**9).denominator == 1


def test_format_bytes():
    assert format_bytes(30 * 2**30) == "30Gi"
    assert format_bytes(2**40) == "1Ti"
    assert format_bytes(3 * 2**29) == "1536Mi"
