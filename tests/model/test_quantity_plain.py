"""The plain-quantity fast path ("1", "500m", "30Gi") gives exactly what the general parser gives: the
same value, or the general parser's own error, for every text."""

from __future__ import annotations

import itertools

from hypothesis import given, settings, strategies as st

from webhook.model import quantity
from webhook.model.quantity import QuantityError

SUFFIXES = ["", "n", "u", "m", "k", "K", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "ki", "e", "E3",
            "i", "mi", "KiB", "e-3", "Gi ", "Mu"]
NUMBERS = ["0", "1", "7", "007", "000", "10", "500", "1024", "999999", "123456789012345678", "999999999999999999",
           "9223372036854775807", "9223372036854775808", "1000000000000000000", "9", "8", "16", "", "+1", "-1", "1.5",
           ".5", "١", "²", "1_0"]


def _outcome(parse, text):
    try:
        value = parse(text)
        return type(value), value
    except QuantityError as exc:
        return type(exc), str(exc)


def test_every_number_and_suffix() -> None:
    for number, suffix in itertools.product(NUMBERS, SUFFIXES):
        text = number + suffix
        assert _outcome(quantity._parse_text, text) == _outcome(quantity._parse_general, text), text


@settings(max_examples=3000)
@given(st.text(alphabet="0123456789kKMGTPEimun+-.eE ", max_size=24))
def test_random_texts(text: str) -> None:
    assert _outcome(quantity._parse_text, text) == _outcome(quantity._parse_general, text)


def _format_bytes_reference(amount) -> str:
    """format_bytes as it was, in Fraction arithmetic throughout."""
    from fractions import Fraction
    amount = Fraction(amount)
    for suffix in ("Ti", "Gi", "Mi", "Ki"):
        unit = quantity._SUFFIX[suffix]
        if amount >= unit and amount % unit == 0:
            return f"{amount // unit}{suffix}"
    if amount >= quantity._SUFFIX["Gi"]:
        return f"{float(amount / quantity._SUFFIX['Gi']):.2f}Gi"
    return str(int(amount))


@settings(max_examples=1000)
@given(st.one_of(st.integers(min_value=-2**70, max_value=2**70),
                 st.sampled_from([0, 1, 1023, 1024, 2**30, 30 * 2**30, 2**40, 3 * 2**40 + 2**30, 2**30 + 1, 2**63 - 1]),
                 st.fractions(max_denominator=10**9)))
def test_format_bytes_as_in_fractions(amount) -> None:
    from fractions import Fraction
    assert quantity.format_bytes(amount) == _format_bytes_reference(amount)
    assert quantity.format_bytes(Fraction(amount)) == _format_bytes_reference(amount)
    assert quantity.format_count(amount) == quantity.format_count(Fraction(amount))


@settings(max_examples=3000)
@given(st.one_of(st.text(alphabet="0123456789kKMGTPEimun+-.eE ", max_size=24),
                 st.sampled_from([n + s for n in NUMBERS for s in SUFFIXES])))
def test_plainly_valid_means_parsed_without_error(text: str) -> None:
    if quantity.plainly_valid(text):
        quantity.parse_quantity(text)  # never raises


def test_plainly_valid_covers_the_usual_forms() -> None:
    assert all(quantity.plainly_valid(t) for t in ("1", "500m", "2Gi", "30Gi", " 1Ti ", "64Mi", "8Ei"[:1]))
    assert not any(quantity.plainly_valid(t) for t in ("1e99999999", "8Ei", "0.5", "+1", 1, 1.5, None, "x"))
