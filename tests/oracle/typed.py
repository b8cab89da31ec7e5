"""CEL values in one comparable form for the oracle's answers and ours: (type, value) with int, uint and double
apart, maps as sorted (key, value) pairs (keys `1` and `true` stay two), timestamps and durations to the
nanosecond, Kubernetes' opaque types (quantity, URL, IP, CIDR, semver) as their text."""

from __future__ import annotations

import base64
import datetime
import math
from typing import Any

from webhook.cel.values import opaque_type

Typed = tuple[str, Any]

# the oracle's names of Kubernetes' opaque types, by the tag our values carry (webhook.cel.values.opaque)
OPAQUE = {"kubernetes.Quantity": "quantity", "kubernetes.URL": "url", "net.IP": "ip", "net.CIDR": "cidr",
          "kubernetes.Semver": "semver"}
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def _double(value: Any) -> Typed:
    if isinstance(value, str):   # the oracle's NaN, +Inf, -Inf
        return ("double", value)
    value = float(value)
    if math.isnan(value):
        return ("double", "NaN")
    if math.isinf(value):
        return ("double", "+Inf" if value > 0 else "-Inf")
    return ("double", value)


def _pairs(pairs: list[tuple[Typed, Typed]]) -> Typed:
    return ("map", tuple(sorted(pairs, key=repr)))


def from_oracle(node: dict[str, Any]) -> Typed:
    kind, value = node["type"], node["value"]
    if kind == "double":
        return _double(value)
    if kind == "list":
        return ("list", tuple(from_oracle(v) for v in value))
    if kind == "map":
        return _pairs([(from_oracle(k), from_oracle(v)) for k, v in value])
    if kind == "optional_type":
        return ("optional_type", None if value is None else from_oracle(value))
    if kind == "google.protobuf.Timestamp":
        return ("timestamp", value)
    if kind == "google.protobuf.Duration":
        return ("duration", int(value))
    if kind in OPAQUE:
        return (OPAQUE[kind], value)
    return (kind, value)


def _timestamp(value: datetime.datetime) -> str:
    utc = value.astimezone(datetime.timezone.utc) if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)
    nanos = getattr(value, "nanosecond", None)
    fraction = f"{nanos:09d}" if nanos is not None else f"{utc.microsecond:06d}000"
    fraction = fraction.rstrip("0")
    return utc.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"


def _duration(value: datetime.timedelta) -> int:
    nanos = getattr(value, "nanoseconds", None)
    if nanos is not None:
        return int(nanos)
    return ((value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds) * 1000


def from_ours(value: Any) -> Typed:
    """One of our evaluation results (plain Python, opaque values as tagged maps) in the same form. A Python int
    is reported as "int": the caller asks our runtime separately whether a top-level integer is a uint."""
    if value is None:
        return ("null_type", None)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return _double(value)
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, (bytes, bytearray)):
        return ("bytes", base64.b64encode(bytes(value)).decode())
    if isinstance(value, datetime.datetime):
        return ("timestamp", _timestamp(value))
    if isinstance(value, datetime.timedelta):
        return ("duration", _duration(value))
    if isinstance(value, (list, tuple)):
        return ("list", tuple(from_ours(v) for v in value))
    if isinstance(value, dict):
        tag = opaque_type(value)
        if tag is not None:
            return (tag, value.get("text"))
        return _pairs([(from_ours(k), from_ours(v)) for k, v in value.items()])
    return (type(value).__name__, repr(value))


def without_uint(value: Typed) -> Typed:
    """The form with uint read as int, where our plain results cannot tell them apart (inside lists and maps)."""
    kind, inner = value
    if kind == "uint":
        return ("int", inner)
    if kind == "list":
        return ("list", tuple(without_uint(v) for v in inner))
    if kind == "map":
        return _pairs([(without_uint(k), without_uint(v)) for k, v in inner])
    if kind == "optional_type" and inner is not None:
        return ("optional_type", without_uint(inner))
    return value
