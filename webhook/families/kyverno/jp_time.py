"""Kyverno's time_* JMESPath functions and Go duration formatting."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from .gotypes import parse_duration

_GO_LAYOUT = [("2006", "%Y"), ("01", "%m"), ("02", "%d"), ("15", "%H"), ("04", "%M"), ("05", "%S"),
              ("Jan", "%b"), ("Mon", "%a"), ("MST", "%Z"), ("-0700", "%z"), ("Z07:00", "%z")]


def format_duration(nanos: int) -> str:
    """Go's time.Duration.String(): "1h2m3s", "1.5s", "300ms", "0s"."""
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size:
                return sign + _trim(nanos / size) + unit
    hours, rest = divmod(nanos, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    seconds = _trim(rest / 1_000_000_000) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}"
    if minutes:
        return f"{sign}{minutes}m{seconds}"
    return sign + seconds


def _trim(value: float) -> str:
    text = f"{value:.9f}".rstrip("0").rstrip(".")
    return text or "0"


def parse_time(layout: str, text: str) -> datetime:
    if layout in ("", "2006-01-02T15:04:05Z07:00"):
        return parse_rfc3339(text)
    fmt = layout
    for go, py in _GO_LAYOUT:
        fmt = fmt.replace(go, py)
    parsed = datetime.strptime(text, fmt)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def parse_rfc3339(text: str) -> datetime:
    value = text.strip()
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    value = re.sub(r"\.(\d{6})\d+", r".\1", value)
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def format_rfc3339(moment: datetime) -> str:
    text = moment.isoformat()
    return text.replace("+00:00", "Z")


def now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)


def time_since(layout: str, start: str, end: str) -> str:
    first = parse_time(layout, start)
    second = parse_time(layout, end) if end else datetime.now(timezone.utc)
    return format_duration(int((second - first) / timedelta(microseconds=1)) * 1000)


def time_add(start: str, duration: str) -> str:
    return format_rfc3339(parse_rfc3339(start) + timedelta(microseconds=parse_duration(duration) / 1000))


def time_diff(start: str, end: str) -> str:
    return format_duration(int((parse_rfc3339(end) - parse_rfc3339(start)) / timedelta(microseconds=1)) * 1000)


def time_to_cron(text: str) -> str:
    moment = parse_rfc3339(text)
    return f"{moment.minute} {moment.hour} {moment.day} {moment.month} {(moment.weekday() + 1) % 7}"
