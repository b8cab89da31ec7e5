"""Ordering across int, uint and double (`5 < 10.0`, `size(x) > 1u`), as Kubernetes' CEL compiles it.

cel-go declares `<`, `<=`, `>`, `>=` for every pair of numeric types (cel.CrossTypeNumericComparisons, on in
Kubernetes' environment); the C++ checker has only same-type overloads, and a library cannot add overloads to
an operator (the runtime refuses a second declaration of `_<_`). Its evaluator does compare numbers across
types, so where the checker refuses such a comparison, the operands of the expression's ordering comparisons
are made `dyn(...)`, which the checker accepts and the evaluator compares by value, as cel-go does.

Only an expression the checker refused for exactly that reason is rewritten; its other comparisons then are
`dyn` too, so a type error among them (`'a' < 1` beside `5 < 10.0`) shows when evaluated, not when compiled.
"""

from __future__ import annotations

import re

from webhook.cel.source import Token, _edit, _matching_close, _matching_open, tokenize

_ORDERING = frozenset({"<", "<=", ">", ">="})
# what ends an operand of a comparison: lower-precedence operators, other relations, separators
_ENDS = frozenset({"&&", "||", "?", ":", ",", "==", "!=", "<", "<=", ">", ">=", "in"})
_MIXED = re.compile(r"found no matching overload for '_(?:<|<=|>|>=)_' applied to '\((int|uint|double), "
                    r"(int|uint|double)\)'")


def refused_for_mixed_numbers(message: str) -> bool:
    """Whether the checker's message names an ordering of two different numeric types."""
    return any(a != b for a, b in _MIXED.findall(message))


def _ends_operand(tokens: list[Token], j: int) -> bool:
    tok = tokens[j]
    if tok.kind == "ident":
        return tok.text == "in"
    if tok.text == "?":  # `.?f` selects; otherwise the conditional
        return not (j and tokens[j - 1].text == ".")
    return tok.kind == "op" and tok.text in _ENDS


def _left(tokens: list[Token], op: int) -> int:
    j = op - 1
    while j >= 0:
        text = tokens[j].text if tokens[j].kind == "op" else ""
        if text in (")", "]", "}"):
            j = _matching_open(tokens, j) - 1
            continue
        if text in ("(", "[", "{") or _ends_operand(tokens, j):
            break
        j -= 1
    return j + 1


def _right(tokens: list[Token], op: int) -> int:
    j = op + 1
    while j < len(tokens):
        text = tokens[j].text if tokens[j].kind == "op" else ""
        if text in ("(", "[", "{"):
            j = _matching_close(tokens, j) + 1
            continue
        if text in (")", "]", "}") or _ends_operand(tokens, j):
            break
        j += 1
    return j - 1


def widen(source: str, tokens: list[Token] | None = None) -> str:
    """`a < b` -> `dyn(a) < dyn(b)` for every ordering comparison of `source`."""
    tokens = tokens if tokens is not None else tokenize(source)
    edits: list[tuple[int, int, str]] = []
    for i, tok in enumerate(tokens):
        if tok.kind != "op" or tok.text not in _ORDERING or i == 0:
            continue
        first, last = _left(tokens, i), _right(tokens, i)
        if first >= i or last <= i:
            continue
        edits += [(tokens[first].start, tokens[first].start, "dyn("), (tokens[i - 1].end, tokens[i - 1].end, ")"),
                  (tokens[i + 1].start, tokens[i + 1].start, "dyn("), (tokens[last].end, tokens[last].end, ")")]
    return _edit(source, edits)
