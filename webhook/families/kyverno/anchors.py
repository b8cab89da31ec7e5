"""Kyverno anchors on pattern keys: ``(k)`` condition, ``=(k)`` equality, ``^(k)`` existence, ``X(k)`` negation,
``<(k)`` global, ``+(k)`` add-if-absent (mutation only)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from webhook.model.quickinit import frozen_dataclass

from .gotypes import CACHED_PATTERN_CHARS

_ANCHOR = re.compile(r"^([+<=X^])?\((.+)\)$", re.DOTALL)

CONDITION, EQUALITY, EXISTENCE, NEGATION, GLOBAL, ADD_IF_ABSENT = "", "=", "^", "X", "<", "+"


@frozen_dataclass
class Anchor:
    modifier: str
    key: str

    def render(self) -> str:
        return f"{self.modifier}({self.key})"


def parse_anchor(text: str) -> Anchor | None:
    if not isinstance(text, str):
        return None
    # pattern keys repeat on every request and are short; a long text is a substituted value: not kept
    return _parse(text) if len(text) <= CACHED_PATTERN_CHARS else _parse_text(text)


@lru_cache(maxsize=4096)
def _parse(text: str) -> Anchor | None:
    return _parse_text(text)


def _parse_text(text: str) -> Anchor | None:
    match = _ANCHOR.match(text)
    if not match:
        return None
    return Anchor(match.group(1) or "", match.group(2))


def is_kind(text: str, *modifiers: str) -> bool:
    anchor = parse_anchor(text)
    return anchor is not None and anchor.modifier in modifiers


def strip_anchor(text: str) -> str:
    anchor = parse_anchor(text)
    return anchor.key if anchor else text


def has_nested_anchors(pattern: Any) -> bool:
    """True when any map below holds a validation anchor (used to order keys the way Kyverno does)."""
    if isinstance(pattern, dict):
        if any(is_kind(k, CONDITION, EXISTENCE, EQUALITY, NEGATION, GLOBAL) for k in pattern):
            return True
        return any(has_nested_anchors(v) for v in pattern.values())
    if isinstance(pattern, list):
        return any(has_nested_anchors(v) for v in pattern)
    return False
