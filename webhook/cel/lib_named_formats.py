"""Kubernetes' named-format library (k8s.io/apiserver/pkg/cel/library/format.go): `format.dns1123Label()` and
the other named formats, `format.named(name)` (an optional format), and `<format>.validate(s)`, an optional
list of the problems found (none when `s` is valid), each in the words of apimachinery's validation
functions at the pinned Kubernetes version.

A format travels as a tagged map (webhook.cel.values). Both optional results are routed through a list of at
most one element (webhook.cel.call_routes), as other Python functions returning optionals.
"""

from __future__ import annotations

import base64
import datetime
import re
from typing import Any, Callable

from webhook.cel.functions import Library, fn, method
from webhook.cel.lib_format import go_quote
from webhook.cel.lib_url import request_uri_problem
from webhook.cel.values import expect, opaque

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = _LABEL + "(\\." + _LABEL + ")*"
_DNS1035 = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = "(" + _QUALIFIED + ")?"
_QUALIFIED_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                  "alphanumeric character")
_UUID = re.compile(r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}")
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_TIME = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))")


def _regex_error(message: str, pattern: str, *examples: str) -> str:
    """apimachinery's RegexError, its examples joined as it joins them."""
    shown = "".join(f"{' or ' if i else ''}'{e}', " for i, e in enumerate(examples))
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


def _too_long(limit: int) -> str:
    return f"must be no more than {limit} characters"


def _matches(pattern: str, value: str) -> bool:
    return re.fullmatch(pattern, value) is not None


def _checked(value: str, limit: int, pattern: str, message: str, *examples: str) -> list[str]:
    """apimachinery's usual pair of checks: a length in bytes, then the pattern."""
    errors = [_too_long(limit)] if len(value.encode()) > limit else []
    if not _matches(pattern, value):
        errors.append(_regex_error(message, pattern, *examples))
    return errors


def _dns1123_label(value: str) -> list[str]:
    if not _matches(_LABEL, value) and _matches(_SUBDOMAIN, value):  # a subdomain, so dots are all that is wrong
        return [_too_long(63)] * (len(value.encode()) > 63) + ["must not contain dots"]
    return _checked(value, 63, _LABEL, "a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                    "or '-', and must start and end with an alphanumeric character", "my-name", "123-abc")


def _dns1123_subdomain(value: str) -> list[str]:
    return _checked(value, 253, _SUBDOMAIN, "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                    "characters, '-' or '.', and must start and end with an alphanumeric character", "example.com")


def _dns1035_label(value: str) -> list[str]:
    return _checked(value, 63, _DNS1035, "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                    "start with an alphabetic character, and end with an alphanumeric character", "my-name", "abc-123")


def _qualified_name(value: str) -> list[str]:
    errors: list[str] = []
    parts = value.split("/")
    if len(parts) > 2:
        return [f"a qualified name {_regex_error(_QUALIFIED_MSG, _QUALIFIED, 'MyName', 'my.name', '123-abc')} "
                "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if len(parts) == 2:
        prefix = parts[0]
        errors += ["prefix part must be non-empty"] if not prefix else [f"prefix part {e}" for e in _dns1123_subdomain(prefix)]
    name = parts[-1]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errors.append(f"name part {_too_long(63)}")
    if not _matches(_QUALIFIED, name):
        errors.append(f"name part {_regex_error(_QUALIFIED_MSG, _QUALIFIED, 'MyName', 'my.name', '123-abc')}")
    return errors


def _label_value(value: str) -> list[str]:
    return _checked(value, 63, _LABEL_VALUE, "a valid label must be an empty string or consist of alphanumeric "
                    "characters, '-', '_' or '.', and must start and end with an alphanumeric character",
                    "MyValue", "my_value", "12345")


def _prefix(check: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """apimachinery's maskTrailingDash before `check`: a name used as a generateName prefix may end in '-' (it
    drops the last two characters and appends 'a', as Kubernetes does)."""
    return lambda value: check(value[:-2] + "a" if len(value) > 1 and value.endswith("-") else value)


def _uri(value: str) -> list[str]:
    why = request_uri_problem(value)
    return [] if why is None else [f"parse {go_quote(value)}: {why}"]


def _is_date(value: str) -> bool:
    if not _DATE.fullmatch(value):
        return False
    try:
        datetime.date(int(value[:4]), int(value[5:7]), int(value[8:]))
    except ValueError:
        return False
    return True


def _is_datetime(value: str) -> bool:
    """strfmt's IsDateTime: a date, a `t`, and a time whose fields it compares as text."""
    if len(value) < 4:
        return False
    parts = value.lower().split("t")
    if len(parts) < 2 or not _is_date(parts[0]):
        return False
    found = _TIME.search(parts[1])
    return found is not None and found.group(1) <= "23" and found.group(2) <= "59" and found.group(3) <= "59"


def _is_base64(value: str) -> bool:
    if not _BASE64.fullmatch(value):
        return False
    base64.b64decode(value)
    return True


def _one(test: Callable[[str], bool], problem: str) -> Callable[[str], list[str]]:
    return lambda value: [] if test(value) else [problem]


FORMATS: dict[str, Callable[[str], list[str]]] = {
    "dns1123Label": _dns1123_label, "dns1123Subdomain": _dns1123_subdomain, "dns1035Label": _dns1035_label,
    "qualifiedName": _qualified_name, "dns1123LabelPrefix": _prefix(_dns1123_label),
    "dns1123SubdomainPrefix": _prefix(_dns1123_subdomain), "dns1035LabelPrefix": _prefix(_dns1035_label),
    "labelValue": _label_value, "uri": _uri,
    "uuid": _one(lambda v: _UUID.fullmatch(v) is not None, "does not match the UUID format"),
    "byte": _one(_is_base64, "invalid base64"), "date": _one(_is_date, "invalid date"),
    "datetime": _one(_is_datetime, "invalid datetime"),
}


def _format(name: str) -> dict[str, Any]:
    return opaque("format", name=name)


def _named(name: str) -> list[Any]:
    return [_format(name)] if name in FORMATS else []


def _validate(value: Any, text: str) -> list[Any]:
    problems = FORMATS[str(expect(value, "format")["name"])](text)
    return [problems] if problems else []


NAMED_FORMATS = Library("format", (
    *(fn(f"format.{name}", [], "map", lambda name=name: _format(name)) for name in FORMATS),
    fn("__qm_format_named", ["string"], "list", _named),
    # linear in the text (each check is a linear-time match); the format value is a constant of ours
    method("__qm_format_validate", ["map", "string"], "list", _validate, lambda _, text: 1 + len(text)),
), optional_results=(("format.named", "__qm_format_named"), (".validate", "__qm_format_validate")))
