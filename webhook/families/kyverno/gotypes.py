"""Go value semantics Kyverno's engine relies on: wildcards, time.ParseDuration, fmt.Sprint, strconv parsing.

Kyverno compares policy values with resource values through these Go primitives, so a faithful port needs their
exact edge cases (for example ``"0"`` is a duration but ``"1"`` is not; ``fmt.Sprint(2.0)`` is ``"2"``).
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from typing import Any

from webhook.model.regex import compile_linear

_DURATION_UNITS = {
    "ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000,
    "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000,
}
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> int:
    """Go's time.ParseDuration, in nanoseconds; ValueError when the text is not a duration."""
    if not isinstance(text, str):
        raise ValueError(f"{text!r} is not a duration")
    body, sign = text, 1
    if body[:1] in "+-" and body:
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body == "0":
        return 0
    if not body:
        raise ValueError(f"invalid duration {text!r}")
    total, pos = 0.0, 0
    while pos < len(body):
        match = _DURATION_PART.match(body, pos)
        if not match:
            raise ValueError(f"invalid duration {text!r}")
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    return sign * int(round(total))


def is_duration(text: Any) -> bool:
    try:
        parse_duration(text)
        return True
    except ValueError:
        return False


# Parsed wildcards are kept for patterns of at most this many characters: what policies write. A longer one is
# text a tenant put where a pattern is read (a substituted annotation), parsed per call and never kept.
CACHED_PATTERN_CHARS = 256


def _wildcard_regex(pattern: str) -> Any:
    return _cached_regex(pattern) if len(pattern) <= CACHED_PATTERN_CHARS else _regex_of(pattern)


def _star_parts(pattern: str) -> tuple[str, ...]:
    return _cached_parts(pattern) if len(pattern) <= CACHED_PATTERN_CHARS else tuple(pattern.split("*"))


@lru_cache(maxsize=4096)
def _cached_regex(pattern: str) -> Any:
    return _regex_of(pattern)


@lru_cache(maxsize=4096)
def _cached_parts(pattern: str) -> tuple[str, ...]:
    return tuple(pattern.split("*"))


def _regex_of(pattern: str) -> Any:
    parts = []
    for char in pattern:
        if char == "*":
            parts.append(".*")
        elif char == "?":
            parts.append(".")
        else:
            parts.append(re.escape(char))
    # RE2: twenty `*` against a long name was a backtracking polynomial of degree twenty with `re`
    return compile_linear("".join(parts), dot_all=True)


def wildcard_match(pattern: str, text: str) -> bool:
    """Kyverno's ext/wildcard.Match: ``*`` any run, ``?`` one character, everything else literal."""
    if "*" not in pattern and "?" not in pattern:
        return pattern == text
    if "?" not in pattern and type(text) is str:
        # `*` alone (every match block's group and version, "*/Pod"...): found by string search in C; a call
        # into RE2's Python wrapper costs far more, and match blocks ask several per rule and admission
        return _stars_match(_star_parts(pattern), text)
    return _wildcard_regex(pattern).fullmatch(text) is not None


def _stars_match(parts: tuple[str, ...], text: str) -> bool:
    """Does `text` match the `*`-separated literal parts (at least two: the pattern has a `*`)? The first
    part starts it and the last ends it, without overlapping; each part between is found leftmost after the
    one before, which finds a match whenever there is one (each `*` takes the shortest run it can)."""
    first, last = parts[0], parts[-1]
    if len(text) < len(first) + len(last) or not text.startswith(first) or not text.endswith(last):
        return False
    position, end = len(first), len(text) - len(last)
    for part in parts[1:-1]:
        found = text.find(part, position, end)
        if found < 0:
            return False
        position = found + len(part)
    return True


def contains_wildcard(text: str) -> bool:
    return "*" in text or "?" in text


def sprint(value: Any) -> str:
    """Go's fmt.Sprint for decoded JSON values (integral floats print without a fraction)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, dict):
        inner = " ".join(f"{k}:{sprint(v)}" for k, v in sorted(value.items()))
        return f"map[{inner}]"
    if isinstance(value, list):
        return "[" + " ".join(sprint(v) for v in value) + "]"
    return str(value)


def format_float(value: float) -> str:
    """%v of a float64: shortest representation, exponent only for very large/small magnitudes."""
    if math.isfinite(value) and value == int(value) and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    return text.replace("e+", "e+0") if re.search(r"e\+\d$", text) else text


def parse_float(text: str) -> float:
    """strconv.ParseFloat: no surrounding spaces, no underscores-only junk; ValueError otherwise."""
    if not isinstance(text, str) or text != text.strip() or not text:
        raise ValueError(f"{text!r} is not a float")
    lowered = text.lower()
    if lowered in ("inf", "+inf", "-inf", "infinity", "+infinity", "-infinity", "nan"):
        return float(lowered)
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
        raise ValueError(f"{text!r} is not a float")
    return float(text)


def parse_int(text: str) -> int:
    if not isinstance(text, str) or not re.fullmatch(r"[+-]?\d+", text):
        raise ValueError(f"{text!r} is not an integer")
    return int(text)


def to_json_text(value: Any) -> str:
    """json.Marshal: compact, keys sorted (Go marshals map keys in order)."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
