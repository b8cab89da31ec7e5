"""Kubernetes resource.Quantity parsing ("30Gi", "500m", "1e3") into exact Fractions, bounded by construction.

The grammar is the API server's (k8s.io/apimachinery/pkg/api/resource, `parseQuantityString` and the
suffix table), including its quirks: a sign, digits, an optional fraction, then a suffix made of
`eEinumkKMGTP` letters, an optional sign and digits; "Gi", "e5", "+" and "." scan as zero there, so they
are zero here. The value, like the API server's, is rounded away from zero to a whole nano and a
binary-SI value is capped at 2^63-1.

Where the API server would do unbounded big-number work (`1e99999999` makes it build 10^99999999),
this parser decides from the lengths alone, before any arithmetic:
- a value whose magnitude is 2^63 or more (in base units) with a decimal suffix or exponent raises
  QuantityRangeError: nothing on a GPU platform is that large, and no quota could hold it;
- a non-zero value below one nano is one nano, as in the API server;
- the text may hold at most MAX_TEXT characters (the API server has no limit; nobody writes more).
So every parse costs at most a few microseconds, whatever the input.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

MAX_VALUE = 2**63 - 1  # the API server's maxAllowed (binary-SI values are capped there)
MAX_TEXT = 256
NANO = Fraction(1, 10**9)

_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SUFFIX = {
    **{k: Fraction(10) ** v for k, v in _DECIMAL.items()},
    **{k: Fraction(2**v) for k, v in _BINARY.items()},
}
# the scanner of parseQuantityString as one expression: sign, digits, fraction, suffix letters, exponent digits
# (ASCII digits, as Go's scanner reads them: `\d` took "١Gi", Arabic-Indic one, for 1Gi)
_SCAN = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)")
_EXPONENT = re.compile(r"[eE]([+-]?[0-9]+)")
_INT64 = 2**63
# The forms quantities take in practice ("1", "500m", "2Gi", "30Gi"): ASCII digits and one table suffix.
# Read exactly by _plain; anything else (a sign, a fraction, an exponent, a result out of range) takes
# the general path, which alone words the errors.
_PLAIN = re.compile(r"([0-9]{1,18})([KMGTPE]i|[kMGTPEmun]|)")
_PLAIN_MULTIPLIER = {**{k: 10**v for k, v in _DECIMAL.items() if v >= 0}, **{k: 2**v for k, v in _BINARY.items()}}
_PLAIN_DIVISOR = {k: 10**-v for k, v in _DECIMAL.items() if v < 0}


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


class QuantityRangeError(QuantityError):
    """A well-formed quantity too large to stand for anything (or too long to read)."""


def scan(text: str) -> tuple[str, str, str, str] | None:
    """parseQuantityString's scan: (sign, digits, fraction digits, suffix), or None for text not of that shape."""
    match = _SCAN.fullmatch(text)
    return None if match is None else (match[1], match[2], match[3] or "", match[4])


def suffix_scale(text: str, suffix: str) -> tuple[int, int]:
    """(base, exponent) of a suffix, as the API server's suffixHandler.interpret reads it; QuantityError
    for one it refuses (unknown, or an exponent beyond 64 bits). `text`: the quantity, for the message."""
    if suffix in _DECIMAL:
        return 10, _DECIMAL[suffix]
    if suffix in _BINARY:
        return 2, _BINARY[suffix]
    match = _EXPONENT.fullmatch(suffix)
    if match:
        significant = match.group(1).lstrip("+-").lstrip("0")
        if len(significant) > 19 or not -_INT64 <= int(match.group(1)) < _INT64:  # Go's strconv.ParseInt(s, 10, 64)
            raise QuantityError(f"{text!r} is not a Kubernetes quantity: exponent {match.group(1)} is not a 64-bit integer")
        return 10, int(match.group(1))
    raise QuantityError(f"{text!r} is not a Kubernetes quantity: unknown suffix {suffix!r} "
                        "(use one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent such as e3)")


def _round_nano(value: Fraction) -> Fraction:
    """Away from zero to a whole nano, as the API server does (inf.RoundUp at scale 9)."""
    nanos = value * 10**9
    whole = math.ceil(nanos) if nanos > 0 else math.floor(nanos)
    return Fraction(whole, 10**9)


def _too_large(text: str) -> QuantityRangeError:
    return QuantityRangeError(f"{text!r} is out of range: a quantity may be at most 2^63-1 "
                              "(9223372036854775807) in base units")


def _value(text: str, negative: bool, num: str, denom: str, base: int, exponent: int) -> Fraction:
    digits = (num + denom).lstrip("0")
    if not digits:
        return Fraction(0)
    # power of ten of the leading significant digit, known before any arithmetic
    lead = len(digits) - 1 - len(denom) + (exponent if base == 10 else 0)
    sign = -1 if negative else 1
    if base == 10:
        if lead >= 19:
            raise _too_large(text)
        if lead < -9:
            return sign * NANO  # below a nano: rounded up to one, as the API server does
        value = Fraction(int(digits), 10 ** len(denom)) * Fraction(10) ** exponent
    else:
        if lead >= 19:
            return sign * Fraction(MAX_VALUE)  # binary SI: capped silently, as the API server does
        value = Fraction(int(digits), 10 ** len(denom)) * 2**exponent
    magnitude = _round_nano(value)
    if magnitude > MAX_VALUE:
        if base == 2:
            return sign * Fraction(MAX_VALUE)
        raise _too_large(text)
    return sign * magnitude


def _plain_parts(text: str) -> tuple[int, int] | None:
    """(numerator, denominator) of a plain quantity in range, or None for the general path. The same value
    as _parse_general: at most 18 digits times a whole multiplier is a whole number (rounding to a nano
    changes nothing), and a whole number of milli, micro or nano units is a multiple of a nano."""
    match = _PLAIN.fullmatch(text)
    if match is None:
        return None
    digits, suffix = match.groups()
    multiplier = _PLAIN_MULTIPLIER.get(suffix)
    if multiplier is None:  # m, u or n
        return int(digits), _PLAIN_DIVISOR[suffix]
    value = int(digits) * multiplier
    return (value, 1) if value <= MAX_VALUE else None  # beyond: capped or refused, as the general path says


def _plain(text: str) -> Fraction | None:
    parts = _plain_parts(text)
    return None if parts is None else Fraction(*parts)


def plainly_valid(value: object) -> bool:
    """True when `value` is text in the plain form (digits and a suffix) whose value is in range: then
    parse_quantity(value) returns a value, and checks that need no value are done without building it.
    False says nothing: parse it."""
    return type(value) is str and _plain_parts(value.strip()) is not None


# "0" ... "255" as plain_whole reads them (digits, no suffix, no space): GPU counts are small, and a dict
# lookup of the text costs less than the plain form's regex
_SMALL_WHOLES = {str(n): n for n in range(256)}


def plain_whole(value: object) -> int | None:
    """int(parse_quantity(value)) when `value` is text in the plain form standing for a whole number (a
    GPU count: "1", "8"), told without building a Fraction. None says nothing: parse it."""
    if type(value) is not str:
        return None
    small = _SMALL_WHOLES.get(value)
    if small is not None:
        return small
    parts = _plain_parts(value.strip())
    if parts is None:
        return None
    numerator, denominator = parts
    return numerator // denominator if numerator % denominator == 0 else None


def _parse_text(text: str) -> Fraction:
    plain = _plain(text)
    return plain if plain is not None else _parse_general(text)


def _parse_general(text: str) -> Fraction:
    if len(text) > MAX_TEXT:
        raise QuantityRangeError(f"quantity of {len(text)} characters is out of range (at most {MAX_TEXT})")
    if not text:
        raise QuantityError("'' is not a Kubernetes quantity (for example 1, 500m, 30Gi, 1Ti)")
    parts = scan(text)
    if parts is None:
        raise QuantityError(f"{text!r} is not a Kubernetes quantity (for example 1, 500m, 30Gi, 1Ti)")
    sign, num, denom, suffix = parts
    base, exponent = suffix_scale(text, suffix)
    return _value(text, sign == "-", num, denom, base, exponent)


def parse_quantity(value: str | int | float) -> Fraction:
    """Raise QuantityError (a ValueError) with the accepted forms when the value is not a Kubernetes quantity,
    QuantityRangeError when it is one but beyond every bound. JSON numbers are read as their text, as the
    API server reads them."""
    if type(value) is str:  # nearly always: the checks below in the order they would go
        return _parse_text(value.strip())
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        if abs(value) > MAX_VALUE:
            raise _too_large(str(value) if value.bit_length() < 200 else "an integer")
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityRangeError(f"{value!r} is out of range")
        return _parse_text(repr(value))
    if not isinstance(value, str):
        raise QuantityError(f"{type(value).__name__} is not a quantity; write a string such as 30Gi")
    return _parse_text(value.strip())


_BYTE_UNITS = tuple((suffix, 2**_BINARY[suffix]) for suffix in ("Ti", "Gi", "Mi", "Ki"))


def format_bytes(amount: Fraction | int) -> str:
    """Render a byte count the way users wrote it: the largest binary unit that keeps it whole, else Gi with decimals."""
    amount = amount if type(amount) is Fraction else Fraction(amount)
    if amount.denominator == 1:  # whole bytes (nearly always): the same steps in integers, without Fraction arithmetic
        whole = amount.numerator
        for suffix, unit in _BYTE_UNITS:
            if whole >= unit and whole % unit == 0:
                return f"{whole // unit}{suffix}"
        if whole >= 2**30:
            return f"{whole / 2**30:.2f}Gi"  # int / int rounds correctly, as float(Fraction) does
        return str(whole)
    for suffix in ("Ti", "Gi", "Mi", "Ki"):
        unit = _SUFFIX[suffix]
        if amount >= unit and amount % unit == 0:
            return f"{amount // unit}{suffix}"
    if amount >= _SUFFIX["Gi"]:
        return f"{float(amount / _SUFFIX['Gi']):.2f}Gi"
    return str(int(amount))


def format_count(amount: Fraction | int) -> str:
    amount = amount if type(amount) is Fraction else Fraction(amount)
    return str(amount.numerator) if amount.denominator == 1 else f"{float(amount):g}"
