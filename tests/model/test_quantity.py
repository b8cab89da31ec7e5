from fractions import Fraction

import pytest

from webhook.model.quantity import format_bytes, parse_quantity


@pytest.mark.parametrize("text, value", [
    ("30Gi", 30 * 2**30), ("1Ti", 2**40), ("500m", Fraction(1, 2)), ("1", 1), ("1e3", 1000), ("1.5Gi", 3 * 2**29),
    ("10G", 10**10), (2, 2), ("0.5", Fraction(1, 2)),
])
def test_parse(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("bad", ["", "Gi", "1GB", "abc", "1 Gi", True])
def test_parse_rejects(bad):
    with pytest.raises(ValueError):
        parse_quantity(bad)


def test_format_bytes():
    assert format_bytes(30 * 2**30) == "30Gi"
    assert format_bytes(2**40) == "1Ti"
    assert format_bytes(3 * 2**29) == "1536Mi"
