"""`getMilliseconds()` as cel-go defines it: of a duration, the whole duration in milliseconds
(`duration('1.5s').getMilliseconds()` is 1500); of a timestamp, the milliseconds within its second.

The C++ runtime's built-in gives a duration's milliseconds within its second (500), and a library cannot
replace a built-in; so calls are routed to this library's function (`route_milliseconds`), which takes
both types as the built-in did.
"""

from __future__ import annotations

import datetime
import re
import zoneinfo

from webhook.cel.functions import Library, method
from webhook.cel.source import Token, _edit

MILLISECONDS = "__qm_milliseconds"
_OFFSET = re.compile(r"[+-]\d{2}:\d{2}")


def _of_duration(value: datetime.timedelta) -> int:
    micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    return micros // 1000 if micros >= 0 else -(-micros // 1000)   # toward zero, as Go's Duration.Milliseconds


def _of_timestamp(value: datetime.datetime, zone: str | None = None) -> int:
    if zone is not None and not _OFFSET.fullmatch(zone):
        try:
            zoneinfo.ZoneInfo(zone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {zone}") from None
    return value.microsecond // 1000


def route_milliseconds(source: str, tokens: list[Token]) -> str:
    """`x.getMilliseconds(...)` -> `x.__qm_milliseconds(...)`."""
    return _edit(source, [(tok.start, tok.end, MILLISECONDS) for i, tok in enumerate(tokens[:-1])
                          if tok.text == "getMilliseconds" and i and tokens[i - 1].text == "."
                          and tokens[i + 1].text == "("])


TIME = Library("time", (
    method(MILLISECONDS, ["duration"], "int", _of_duration),
    method(MILLISECONDS, ["timestamp"], "int", _of_timestamp),
    method(MILLISECONDS, ["timestamp", "string"], "int", _of_timestamp),
))


def uses_milliseconds(tokens: list[Token]) -> bool:
    return any(t.text == "getMilliseconds" for t in tokens)


