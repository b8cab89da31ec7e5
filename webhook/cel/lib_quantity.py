"""Kubernetes quantity and semver libraries; values are tagged maps holding a canonical text.

A quantity's canonical text is its exact value rounded up to nano units (as resource.Quantity rounds),
so equal amounts written differently (`1`, `1000m`) are equal maps and compare equal with `==`.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction
from typing import Any

from webhook.cel.functions import Library, fn, method
from webhook.cel.values import describe, expect, opaque, opaque_type
from webhook.model.quantity import QuantityError, QuantityRangeError, parse_quantity, scan, suffix_scale

_INT64 = 2**63
_NANO = Fraction(1, 10**9)


def _canonical(amount: Fraction) -> str:
    nanos = math.ceil(amount / _NANO)
    for suffix, scale in (("", 10**9), ("m", 10**6), ("u", 10**3), ("n", 1)):
        if nanos % scale == 0:
            return f"{nanos // scale}{suffix}"
    raise AssertionError("unreachable: scale 1 always divides")


def _make(amount: Fraction) -> dict[str, Any]:
    return opaque("quantity", text=_canonical(amount))


@functools.lru_cache(maxsize=4096)
def _canonical_text(text: str) -> str:
    return _canonical(_parse(text))


def quantity(text: str) -> dict[str, Any]:
    return opaque("quantity", text=_canonical_text(text))


# resource.ParseQuantity's three errors, in its words (policies and tests match on them)
_FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
# the largest decimal magnitude read exactly beyond the model's 2^63 bound: Kubernetes keeps such a
# value exact (inf.Dec); past this we keep the model's refusal (10^99999999 would be built digit by digit)
_BIG_DIGITS = 100


def _parse(text: str) -> Fraction:
    if not isinstance(text, str) or text != text.strip() or not text:
        raise ValueError(_FORMAT_WRONG)
    try:
        return parse_quantity(text)
    except QuantityRangeError:
        big = _parse_big(text)
        if big is None:
            raise
        return big
    except ValueError:
        raise ValueError(_kubernetes_error(text)) from None


def _kubernetes_error(text: str) -> str:
    """Which of ParseQuantity's errors: a text of the right shape fails on its suffix (an unknown one, or an
    exponent beyond 64 bits); anything else is the wrong format."""
    parts = scan(text)
    if parts is None:
        return _FORMAT_WRONG
    return f"unable to parse quantity's suffix: {parts[3]!r}"


def _parse_big(text: str) -> Fraction | None:
    """A well-formed decimal quantity of 2^63 or more, exactly (Kubernetes compares and adds such values;
    they are no integers), as long as its magnitude stays within _BIG_DIGITS digits."""
    parts = scan(text)
    if parts is None:
        return None
    sign, num, denom, suffix = parts
    try:
        base, exponent = suffix_scale(text, suffix)
    except QuantityError:
        return None
    if base != 10:  # a binary suffix is capped (the model's range error stands)
        return None
    magnitude = len(num) + exponent
    if magnitude > _BIG_DIGITS:
        return None
    sign_of = -1 if sign == "-" else 1
    if magnitude < -_BIG_DIGITS:
        # below 10^-100 (a text past the model's length bound with an exponent such as e-999999999):
        # rounding up to a nano makes it one nano, or zero, and 10^|exponent| would never finish
        return sign_of * _NANO if (num + denom).strip("0") else Fraction(0)
    value = Fraction(int(num + denom or "0"), 10 ** len(denom)) * Fraction(10) ** exponent
    nanos = math.ceil(value / _NANO)
    return sign_of * nanos * _NANO


@functools.lru_cache(maxsize=4096)
def _parse_canonical(text: str) -> Fraction:
    return _parse(text)


def _amount(value: Any) -> Fraction:
    return _parse_canonical(expect(value, "quantity")["text"])


def _is_quantity(text: str) -> bool:
    try:
        _parse(text)
    except ValueError:
        return False
    return True


def _as_integer(value: Any) -> int:
    amount = _amount(value)
    if amount.denominator != 1 or not -_INT64 <= amount.numerator < _INT64:
        raise ValueError("cannot convert value to integer")
    return amount.numerator


def _is_integer(value: Any) -> bool:
    amount = _amount(value)
    return amount.denominator == 1 and -_INT64 <= amount.numerator < _INT64


def _operand(value: Any) -> Fraction:
    return Fraction(value) if isinstance(value, int) and not isinstance(value, bool) else _amount(value)


def _sign(amount: Fraction) -> int:
    return (amount > 0) - (amount < 0)


_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$")


def _normalize(text: str) -> str:
    """semver(s, true) as Kubernetes' normalizeAndParse: drop one leading v, split in at most three parts on
    '.', strip each part's leading zeros, fill a missing minor/patch with 0 (a short version with a
    pre-release or build is refused)."""
    parts = text.removeprefix("v").split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            stripped = part.lstrip("0")
            parts[i] = stripped if stripped[:1].isdigit() and stripped[:1].isascii() else "0" + stripped
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise ValueError("error converting string to semver: short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


def semver(text: str, normalize: bool = False) -> dict[str, Any]:
    candidate = _normalize(text) if normalize else text
    if not _SEMVER.match(candidate):
        raise ValueError(f"error converting string to semver: invalid semantic version {text!r}")
    # Kubernetes' Semver.Equal is blang's EQ, which ignores build metadata: 1.0.0+a == 1.0.0+b
    return opaque("semver", text=candidate.partition("+")[0])


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        semver(text, normalize)
    except ValueError:
        return False
    return True


def _version(value: Any) -> tuple[int, int, int, str | None]:
    match = _SEMVER.match(expect(value, "semver")["text"])
    assert match is not None
    return int(match[1]), int(match[2]), int(match[3]), match[4]


def _prerelease_key(pre: str | None) -> tuple:
    if pre is None:
        return (1,)
    return (0, tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split(".")))


def _compare_semver(a: Any, b: Any) -> int:
    va, vb = _version(a), _version(b)
    ka = (va[:3], _prerelease_key(va[3]))
    kb = (vb[:3], _prerelease_key(vb[3]))
    return (ka > kb) - (ka < kb)


def compare_to(a: Any, b: Any) -> int:
    """Shared by quantity and semver: both declare compareTo/isGreaterThan/isLessThan on their type."""
    kind_a, kind_b = opaque_type(a), opaque_type(b)
    if kind_a != kind_b or kind_a not in ("quantity", "semver"):
        raise TypeError(f"no such overload: {describe(a)}.compareTo({describe(b)})")
    if kind_a == "semver":
        return _compare_semver(a, b)
    return _sign(_amount(a) - _amount(b))


QUANTITY = Library("quantity", (
    fn("quantity", ["string"], "map", quantity),
    fn("isQuantity", ["string"], "bool", _is_quantity),
    fn("sign", ["map"], "int", lambda q: _sign(_amount(q))),   # a global function in library/quantity.go: sign(q)
    method("isInteger", ["map"], "bool", _is_integer),
    method("asInteger", ["map"], "int", _as_integer),
    method("asApproximateFloat", ["map"], "double", lambda q: float(_amount(q))),
    method("add", ["map", "map"], "map", lambda q, o: _make(_amount(q) + _operand(o))),
    method("add", ["map", "int"], "map", lambda q, o: _make(_amount(q) + _operand(o))),
    method("sub", ["map", "map"], "map", lambda q, o: _make(_amount(q) - _operand(o))),
    method("sub", ["map", "int"], "map", lambda q, o: _make(_amount(q) - _operand(o))),
    method("compareTo", ["map", "map"], "int", compare_to),
    method("isGreaterThan", ["map", "map"], "bool", lambda a, b: compare_to(a, b) > 0),
    method("isLessThan", ["map", "map"], "bool", lambda a, b: compare_to(a, b) < 0),
))

SEMVER = Library("semver", (
    fn("semver", ["string"], "map", semver),
    fn("semver", ["string", "bool"], "map", semver),
    fn("isSemver", ["string"], "bool", _is_semver),
    fn("isSemver", ["string", "bool"], "bool", _is_semver),
    method("major", ["map"], "int", lambda v: _version(v)[0]),
    method("minor", ["map"], "int", lambda v: _version(v)[1]),
    method("patch", ["map"], "int", lambda v: _version(v)[2]),
))
