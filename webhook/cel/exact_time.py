"""Durations and timestamps with their nanoseconds, where the runtime's bindings let them through.

Both runtimes' bindings hand a duration or timestamp to Python as `timedelta` / `datetime`, microseconds at
best. CEL's own `string()` of them is exact (`1.000000001s`, `2024-01-01T00:00:00.123456789Z`), so a program
whose checked result type is a duration or a timestamp also evaluates its `string()` (webhook.cel.backend_cpp)
and returns one of these: a `timedelta` / `datetime` (every consumer keeps working) carrying the exact value
in `nanoseconds` (the whole duration) / `nanosecond` (within the second). Values inside lists and maps, and
arguments of our Python functions, stay as the bindings give them.
"""

from __future__ import annotations

import datetime
import re
from decimal import Decimal
from typing import Any, Mapping

from google.protobuf import duration_pb2, timestamp_pb2

_NANOS = Decimal(1_000_000_000)
_TIMESTAMP = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z")


class ExactDuration(datetime.timedelta):
    """A duration of `nanoseconds` (its timedelta value: those truncated to microseconds, toward zero)."""

    nanoseconds: int

    def __new__(cls, nanoseconds: int) -> "ExactDuration":
        micros = abs(nanoseconds) // 1000
        made = super().__new__(cls, microseconds=micros if nanoseconds >= 0 else -micros)
        made.nanoseconds = nanoseconds
        return made

    def __reduce__(self) -> tuple[type, tuple[int]]:
        return (ExactDuration, (self.nanoseconds,))


class ExactTimestamp(datetime.datetime):
    """A UTC timestamp whose `nanosecond` (within its second) its microsecond field cannot hold."""

    nanosecond: int

    @classmethod
    def at(cls, whole: datetime.datetime, nanosecond: int) -> "ExactTimestamp":
        made = cls(whole.year, whole.month, whole.day, whole.hour, whole.minute, whole.second, nanosecond // 1000,
                   tzinfo=datetime.timezone.utc)
        made.nanosecond = nanosecond
        return made


def duration_from_text(text: str) -> ExactDuration | None:
    """CEL's `string(duration)` (`-1.5s`, `1.000000001s`) read back; None for anything else."""
    if not text.endswith("s"):
        return None
    try:
        return ExactDuration(int(Decimal(text[:-1]) * _NANOS))
    except ArithmeticError:
        return None


def timestamp_from_text(text: str) -> ExactTimestamp | None:
    """CEL's `string(timestamp)` (RFC 3339 in UTC, up to nine fraction digits) read back; None for anything else."""
    found = _TIMESTAMP.fullmatch(text)
    if found is None:
        return None
    whole = datetime.datetime.strptime(found.group(1), "%Y-%m-%dT%H:%M:%S")
    return ExactTimestamp.at(whole, int((found.group(2) or "").ljust(9, "0")))


def with_nanoseconds(value: datetime.timedelta | datetime.datetime, text: object) -> object:
    """`value` as read back from `text`, CEL's `string()` of it; `value` itself when `text` is not that."""
    if not isinstance(text, str):
        return value
    exact = duration_from_text(text) if isinstance(value, datetime.timedelta) else timestamp_from_text(text)
    return value if exact is None else exact


def exact_text(value: datetime.timedelta | datetime.datetime) -> str | None:
    """The JSON text of a value holding more than microseconds (cel-go's: `1.000000001s`, nine fraction digits
    of a timestamp); None for any other, whose text is the caller's."""
    nanos = getattr(value, "nanoseconds", None) if isinstance(value, datetime.timedelta) else None
    if nanos is not None and nanos % 1000:
        sign, whole = ("-" if nanos < 0 else ""), abs(nanos)
        return f"{sign}{whole // 1_000_000_000}.{whole % 1_000_000_000:09d}".rstrip("0") + "s"
    nanosecond = getattr(value, "nanosecond", None) if isinstance(value, datetime.datetime) else None
    if nanosecond is not None and nanosecond % 1000:
        utc = value.astimezone(datetime.timezone.utc)
        return utc.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanosecond:09d}Z"
    return None


def as_protos(value: Any) -> Any:
    """Timestamps and durations (e.g. earlier variables' values) enter the runtime as protobuf messages;
    it refuses Python datetime objects in an activation."""
    if isinstance(value, datetime.datetime):
        message = timestamp_pb2.Timestamp()
        message.FromDatetime(value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc))
        message.nanos = getattr(value, "nanosecond", message.nanos)   # an exact_time value keeps its nanoseconds
        return message
    if isinstance(value, datetime.timedelta):
        message = duration_pb2.Duration()
        message.FromTimedelta(value)
        if isinstance(value, ExactDuration):
            message.FromNanoseconds(value.nanoseconds)
        return message
    if isinstance(value, Mapping):
        return {k: as_protos(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_protos(v) for v in value]
    return value
