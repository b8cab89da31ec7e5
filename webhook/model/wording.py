"""Counts in messages, in English: "1 policy", "2 policies"."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str = "") -> str:
    """`count` and the noun, singular for exactly one; `plural` when adding "s" is not it."""
    return f"{count} {noun if count == 1 else (plural or noun + 's')}"
