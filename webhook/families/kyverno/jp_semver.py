"""semver_compare: blang/semver ranges (">=1.2.0 <2.0.0 || 3.x" style) as Kyverno uses them."""

from __future__ import annotations

import re

_VERSION = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


def _parse(text: str) -> tuple:
    match = _VERSION.match(text.strip())
    if not match:
        raise ValueError(f"invalid semantic version {text!r}")
    major, minor, patch, pre = match.groups()
    release = (int(major), int(minor or 0), int(patch or 0))
    pre_key = tuple((0, int(p)) if p.isdigit() else (1, p) for p in pre.split(".")) if pre else None
    return release, pre_key


def _cmp(a: tuple, b: tuple) -> int:
    if a[0] != b[0]:
        return -1 if a[0] < b[0] else 1
    if a[1] == b[1]:
        return 0
    if a[1] is None:
        return 1
    if b[1] is None:
        return -1
    return -1 if a[1] < b[1] else 1


def _clause(version: tuple, clause: str) -> bool:
    match = re.match(r"^(>=|<=|!=|==|=|>|<)?\s*(.+)$", clause)
    op, target = match.group(1) or "=", _parse(match.group(2))
    result = _cmp(version, target)
    return {"=": result == 0, "==": result == 0, "!=": result != 0, ">": result > 0, "<": result < 0,
            ">=": result >= 0, "<=": result <= 0}[op]


def semver_matches(version: str, constraint: str) -> bool:
    parsed = _parse(version)
    for alternative in constraint.split("||"):
        clauses = re.findall(r"(?:>=|<=|!=|==|=|>|<)?\s*[^\s<>=!]+", alternative.strip())
        if clauses and all(_clause(parsed, c.strip()) for c in clauses):
            return True
    return False
