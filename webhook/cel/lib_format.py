"""`string.format(list)` as cel-go's strings extension at the version Kubernetes enables (StringsVersion 2,
ext/formatting.go): the clauses %s %d %f %e %b %o %x %X and %%, with cel-go's own renderings.

- %s of a double is Go's shortest `%g` (`2e-09`, `1e+06`, `+Inf`); inside a list or map a double is `%.6f`
  and strings, bytes, timestamps and durations are written as CEL literals (`["a", 3.140000,
  timestamp("...")]`), map entries sorted by their rendered key.
- %f and %e take doubles only (or the strings "NaN", "Infinity", "-Infinity"); cel-go renders them
  through golang.org/x/text for its default locale (en_US): thousands grouped (`1,234.50`), infinities
  as `∞`, %e as `1.052033 × 10⁰³`,
  and the precision of %e read as a width (what cel-go's `%%%de` does).
- %b takes integers and bools; %x and %X also strings and bytes (their UTF-8 bytes in hex).
"""

from __future__ import annotations

import datetime
import math
from decimal import Decimal
from typing import Any, Sequence

from webhook.cel.cost import STRING_TRAVERSAL, charge, refuse_beyond
from webhook.cel.values import describe, kind_of, opaque_type, to_json

# the exact decimal value of a double ends within 1,074 digits after the point (2^-1074 has that many):
# anything longer is only zeros
MAX_PRECISION = 1074
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
               "\\": "\\\\", '"': '\\"'}


def go_double(value: float) -> str:
    """Go's strconv.FormatFloat(v, 'g', -1, 64): the shortest digits, an exponent below 1e-4 or from 1e+06."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits))
    point = len(text) + int(exponent)     # where the decimal point falls among the digits
    exp = point - 1
    head = "-" if sign else ""
    if exp < -4 or exp >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{head}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{head}0.{'0' * -point}{text}"
    if point >= len(text):
        return head + text + "0" * (point - len(text))
    return f"{head}{text[:point]}.{text[point:]}"


def go_quote(text: str) -> str:
    """Go's %q for the strings cel-go writes into a list or map."""
    out = []
    for ch in text:
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable() or ch == " ":
            out.append(ch)
        elif "\udc80" <= ch <= "\udcff":  # a byte that is no UTF-8 (bytes decoded with surrogateescape)
            out.append(f"\\x{ord(ch) - 0xDC00:02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x80 else f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def _timestamp(value: datetime.datetime) -> str:
    """Go's RFC3339Nano, as cel-go converts a timestamp to a string: the fraction without trailing zeros."""
    text = str(to_json(value))
    if "." not in text:
        return text
    whole, _, fraction = text[:-1].partition(".")
    fraction = fraction.rstrip("0")
    return f"{whole}.{fraction}Z" if fraction else f"{whole}Z"


def _no_string_clause(value: Any) -> TypeError:
    return TypeError("error during formatting: string clause can only be used on strings, bools, bytes, ints, "
                     f"doubles, maps, lists, types, durations, and timestamps, was given {describe(value)}")


def _as_text(value: Any) -> str:
    """%s at the top level: the value converted to a string, as CEL's string() does in cel-go."""
    kind = kind_of(value)
    if kind == "string":
        return value
    if kind == "bool":
        return "true" if value else "false"
    if kind == "null":
        return "null"
    if kind == "double":
        return go_double(value)
    if kind in ("int", "uint"):
        return str(value)
    if kind == "bytes":
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("error during formatting: invalid UTF-8 in bytes value") from None
    if kind == "timestamp":
        return _timestamp(value)
    if kind == "duration":
        return str(to_json(value))
    return _as_member(value)


def _as_member(value: Any) -> str:
    """A value inside a list or map, written as a CEL literal."""
    kind = kind_of(value)
    if kind == "string":
        return go_quote(value)
    if kind == "bytes":
        return "b" + go_quote(bytes(value).decode("utf-8", "surrogateescape"))
    if kind == "double":
        text = f"{value:.6f}" if math.isfinite(value) else go_double(value)
        return text if math.isfinite(value) else f'"{text}"'
    if kind == "timestamp":
        return f'timestamp("{_timestamp(value)}")'
    if kind == "duration":
        return f'duration("{to_json(value)}")'
    if kind == "list":
        return "[" + ", ".join(_as_member(v) for v in value) + "]"
    if kind == "map":
        if opaque_type(value) is not None:
            raise _no_string_clause(value)
        pairs = sorted((_as_key(k), _as_member(v)) for k, v in value.items())
        return "{" + ", ".join(f"{k}:{v}" for k, v in pairs) + "}"
    if kind in ("int", "uint", "bool", "null"):
        return _as_text(value)
    raise _no_string_clause(value)


def _as_key(key: Any) -> str:
    kind = kind_of(key)
    if kind == "string":
        return go_quote(key)
    if kind in ("bool", "int", "uint"):
        return _as_text(key)
    raise TypeError(f"error during formatting: no formatting function for map key of type {describe(key)}")


def _floating(verb: str, value: Any) -> float:
    kind = kind_of(value)
    if kind == "double":
        return value
    if kind == "string" and value in ("NaN", "Infinity", "-Infinity"):
        return float(value)
    clause = "fixed-point" if verb == "f" else "scientific"
    raise TypeError(f"error during formatting: {clause} clause can only be used on doubles, was given {describe(value)}")


def _localized_special(number: float) -> str | None:
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "∞" if number > 0 else "-∞"
    return None


def _scientific(number: float, width: int) -> str:
    text = _localized_special(number)
    if text is None:
        mantissa, _, exp = f"{number:.6e}".partition("e")
        exponent = int(exp)
        power = f"{'-' if exponent < 0 else ''}{abs(exponent):02d}".translate(_SUPERSCRIPT)
        text = f"{mantissa}\u202f×\u202f10{power}"
    return text.rjust(width)


def _integer(verb: str, value: Any, clause: str) -> str:
    kind = kind_of(value)
    if verb == "b" and kind == "bool":
        return "1" if value else "0"
    if kind in ("int", "uint"):
        return format(value, verb)
    raise TypeError(f"error during formatting: {clause}, was given {describe(value)}")


def _format_one(verb: str, precision: int | None, value: Any) -> str:
    if verb == "s":
        return _as_text(value)
    if verb == "d":
        return _integer("d", value, "decimal clause can only be used on integers")
    if verb == "f":
        number = _floating("f", value)
        special = _localized_special(number)
        # x/text groups the whole part for en_US, as its documentation shows (123,456.78)
        return special if special is not None else f"{number:,.{6 if precision is None else precision}f}"
    if verb == "e":
        return _scientific(_floating("e", value), 6 if precision is None else precision)
    if verb == "b":
        return _integer("b", value, "only integers and bools can be formatted as binary")
    if verb == "o":
        return _integer("o", value, "octal clause can only be used on integers")
    if verb in "xX":
        kind = kind_of(value)
        if kind in ("string", "bytes"):
            data = value.encode() if kind == "string" else bytes(value)
            text = data.hex()
        elif kind in ("int", "uint"):
            text = format(value, "x")
        else:
            raise TypeError("error during formatting: only integers, byte buffers, and strings can be formatted "
                            f"as hex, was given {describe(value)}")
        return text.upper() if verb == "X" else text
    raise ValueError(f"could not parse formatting clause: unrecognized formatting clause {verb!r}")


def _precision(template: str, i: int) -> tuple[int, int]:
    """The digits after a '.', and where the verb is."""
    j = i + 1
    while j < len(template) and template[j].isdigit():
        j += 1
    if j >= len(template):
        raise ValueError("could not parse formatting clause: error while parsing precision: "
                         "could not find end of precision specifier")
    if j - i - 1 > 4 or int(template[i + 1:j] or 0) > MAX_PRECISION:
        # '%.2000000000f' made a 2 GB string on the event loop, for seconds, the cost limit unaware
        raise ValueError(f"format: precision {template[i + 1:j]} is beyond the {MAX_PRECISION} digits "
                         "a double can hold after the point")
    return int(template[i + 1:j] or 0), j


def format_string(template: str, args: Sequence[Any]) -> str:
    out: list[str] = []
    i = used = size = 0
    while i < len(template):
        ch = template[i]
        i += 1
        if ch != "%":
            out.append(ch)
            continue
        if i >= len(template):
            raise ValueError("could not parse formatting clause: unexpected end of string")
        if template[i] == "%":
            out.append("%")
            i += 1
            continue
        precision = None
        if template[i] == ".":
            precision, i = _precision(template, i)
        if used >= len(args):
            raise IndexError(f"index {used} out of range")
        piece = _format_one(template[i], precision, args[used])
        size += len(piece)
        refuse_beyond(size, "format")  # a list rendered once per clause: each clause's text counts
        charge(len(piece) * STRING_TRAVERSAL, "format")
        out.append(piece)
        used, i = used + 1, i + 1
    return "".join(out)
