"""Kubernetes resource.Quantity parsing ("30Gi", "500m", "1e3") into exact Fractions."""

from __future__ import annotations

import re
from fractions import Fraction

_SUFFIX = {
    "": Fraction(1),
    "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18),
    "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40),
    "Pi": Fraction(2**50), "Ei": Fraction(2**60),
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$")


def parse_quantity(value: str | int | float) -> Fraction:
    """Raise ValueError with the accepted forms when the text is not a Kubernetes quantity."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a quantity")
    if isinstance(value, (int, float)):
        return Fraction(value)
    match = _QUANTITY.match(str(value).strip())
    if not match:
        raise ValueError(f"{value!r} is not a Kubernetes quantity (for example 1, 500m, 30Gi, 1Ti)")
    number, exponent, suffix = match.groups()
    amount = Fraction(number)
    if exponent:
        return amount * Fraction(10) ** int(exponent[1:])
    return amount * _SUFFIX[suffix or ""]


def format_bytes(amount: Fraction | int) -> str:
    """Render a byte count the way users wrote it: the largest binary unit that keeps it whole, else Gi with decimals."""
    amount = Fraction(amount)
    for suffix in ("Ti", "Gi", "Mi", "Ki"):
        unit = _SUFFIX[suffix]
        if amount >= unit and amount % unit == 0:
            return f"{amount // unit}{suffix}"
    if amount >= _SUFFIX["Gi"]:
        return f"{float(amount / _SUFFIX['Gi']):.2f}Gi"
    return str(int(amount))


def format_count(amount: Fraction | int) -> str:
    amount = Fraction(amount)
    return str(amount.numerator) if amount.denominator == 1 else f"{float(amount):g}"
