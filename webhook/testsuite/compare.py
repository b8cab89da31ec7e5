"""Compare an actual resource with the expected one as the Kyverno CLI does.

Both sides are tidied first (nulls, empty maps and empty lists dropped, recursively), then must be
equal: maps key by key, lists element by element. Numbers compare by value (YAML `1` equals JSON
`1.0`), booleans never equal numbers. Generated objects lose `generate.kyverno.io/*` labels and get
`app.kubernetes.io/managed-by: kyverno` on both sides, so ownership labels do not count.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

_ABSENT = object()


def tidy(value: Any) -> Any:
    if isinstance(value, Mapping):
        out = {k: t for k, v in value.items() if (t := tidy(v)) is not _ABSENT}
        return out if out else _ABSENT
    if isinstance(value, list):
        items = [t for v in value if (t := tidy(v)) is not _ABSENT]
        return items if items else _ABSENT
    return _ABSENT if value is None else value


def fixup_generate_labels(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(obj))
    meta = out.setdefault("metadata", {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if not str(k).startswith("generate.kyverno.io/")}
    labels["app.kubernetes.io/managed-by"] = "kyverno"
    meta["labels"] = labels
    return out


def equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def same_resource(actual: Mapping[str, Any], expected: Mapping[str, Any]) -> bool:
    return equal(tidy(actual), tidy(expected))


def differences(actual: Any, expected: Any, path: str = "", limit: int = 5) -> list[str]:
    """The first few paths where the two differ, for the REASON column's detail."""
    a, e = tidy(actual), tidy(expected)
    out: list[str] = []
    _diff(a, e, path, out, limit)
    return out


def _diff(a: Any, e: Any, path: str, out: list[str], limit: int) -> None:
    if len(out) >= limit or equal(a, e):
        return
    if isinstance(a, Mapping) and isinstance(e, Mapping):
        for key in sorted(set(a) | set(e), key=str):
            if key not in a:
                out.append(f"{path}/{key}: only in expected")
            elif key not in e:
                out.append(f"{path}/{key}: only in actual")
            else:
                _diff(a[key], e[key], f"{path}/{key}", out, limit)
            if len(out) >= limit:
                return
        return
    if isinstance(a, list) and isinstance(e, list) and len(a) == len(e):
        for i, (x, y) in enumerate(zip(a, e)):
            _diff(x, y, f"{path}/{i}", out, limit)
        return
    shown_a = "absent" if a is _ABSENT else repr(a)[:80]
    shown_e = "absent" if e is _ABSENT else repr(e)[:80]
    out.append(f"{path or '/'}: expected {shown_e}, got {shown_a}")
