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
