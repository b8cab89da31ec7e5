"""Value conventions shared by the function libraries and both backends.

Library functions see and return plain Python values (str, int, float, bool, None, bytes, list, dict,
datetime, timedelta). Kubernetes' opaque CEL types (quantity, URL, IP, CIDR, semver, image reference,
authorizer) travel through both runtimes as small tagged maps: ``{"@cel": "<type>", ...}``. The tag
keeps member functions (``q.add(...)``) dispatchable and values of the same type comparable with ``==``
(each type stores a canonical form, so ``quantity('1') == quantity('1000m')``).
"""

from __future__ import annotations

import base64
import datetime
import math
from typing import Any, Mapping

from webhook.cel.exact_time import exact_text

TAG = "@cel"
# the opaque types Kubernetes' libraries give a string() overload (library/ip.go, cidr.go); not URL, quantity, semver
STRING_CONVERTIBLE = frozenset({"ip", "cidr"})

# Kinds name the runtime shapes an overload parameter accepts; "dyn" means any of them.
KINDS = ("string", "int", "uint", "double", "bool", "bytes", "null", "list", "map", "timestamp", "duration")


def opaque(type_name: str, **fields: Any) -> dict[str, Any]:
    return {TAG: type_name, **fields}


def opaque_type(value: Any) -> str | None:
    if isinstance(value, Mapping):
        tag = value.get(TAG)
        return tag if isinstance(tag, str) else None
    return None


def expect(value: Any, type_name: str) -> Mapping[str, Any]:
    if opaque_type(value) != type_name:
        raise TypeError(f"expected a {type_name}, got {describe(value)}")
    return value


def kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, Mapping):
        return "map"
    if isinstance(value, datetime.datetime):
        return "timestamp"
    if isinstance(value, datetime.timedelta):
        return "duration"
    return type(value).__name__


def describe(value: Any) -> str:
    return opaque_type(value) or kind_of(value)


def plain(value: Any) -> Any:
    """Results handed back to callers: dicts, lists and scalars. Opaque values stay tagged maps, so a
    variable holding a quantity is still a quantity in the next expression; `to_json` renders them."""
    kind = type(value)  # exact types first: the generic isinstance checks below cost more, on every value
    if kind is str or kind is int or kind is bool or kind is float or value is None:
        return value
    if kind is dict:
        return {k if type(k) is str else plain(k): plain(v) for k, v in value.items()}
    if kind is list:
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, bytearray):
        return bytes(value)
    return value


MAX_VALUE_SIZE = 3 * 1024 * 1024   # the request size cap: no library call builds a value bigger than a request


def check_size(value: Any) -> Any:
    """Library results are bounded, so chains like `s.replace('a', 'aaaa')` cannot grow without limit."""
    if isinstance(value, (str, bytes, bytearray, list, tuple, dict)) and len(value) > MAX_VALUE_SIZE:
        raise ValueError(f"result has {len(value)} elements, more than the limit of {MAX_VALUE_SIZE}")
    return value


def with_name(function: str, exc: BaseException) -> str:
    """A library failure names its function once (messages of lookups often name it already)."""
    message = str(exc) or type(exc).__name__
    return message if message.startswith(function) else f"{function}: {message}"


def to_json(value: Any) -> Any:
    """An evaluation result as JSON, the way cel-go converts to JSON: timestamps RFC 3339 (UTC, `Z`),
    durations seconds with an `s` suffix, bytes base64, opaque values their text. `evaluate` keeps the
    CEL types so that a variable's value feeds later expressions unchanged; patches and generated
    objects need this."""
    if isinstance(value, (datetime.datetime, datetime.timedelta)) and (exact := exact_text(value)) is not None:
        return exact
    if isinstance(value, datetime.datetime):
        text = value.astimezone(datetime.timezone.utc).isoformat()
        return text.replace("+00:00", "Z")
    if isinstance(value, datetime.timedelta):
        seconds = value.total_seconds()
        return f"{int(seconds)}s" if seconds.is_integer() else f"{seconds:.9f}".rstrip("0") + "s"
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, Mapping):
        if opaque_type(value) is not None and "text" in value:
            return value["text"]   # quantity, URL, IP, CIDR, semver, image: their Kubernetes text
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    return value


_JSON_SCALARS = (str, bool, int, type(None))


class NotJson(ValueError):
    """A value for the API server holds what JSON cannot carry; the message says where."""


def json_value(value: Any, where: str = "the value") -> Any:
    """`to_json(value)`, refused where it holds what JSON cannot carry (a CEL type, a double that is not finite):
    NotJson naming the place. What a mutation patches in and what a policy generates go to the API server as
    JSON; a CEL `duration` there was a 500 when the answer was encoded, and the policy's failure policy never
    decided."""
    converted = to_json(value)
    _refuse_what_json_cannot_hold(converted, where)
    return converted


def _refuse_what_json_cannot_hold(value: Any, where: str) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _refuse_what_json_cannot_hold(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _refuse_what_json_cannot_hold(item, f"{where}[{index}]")
    elif not (isinstance(value, _JSON_SCALARS) or isinstance(value, float) and math.isfinite(value)):
        what = str(value) if isinstance(value, float) else f"a {describe(value)} value"
        raise NotJson(f"{where} is {what}, which JSON cannot hold")
