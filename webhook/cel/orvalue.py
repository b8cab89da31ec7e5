"""Kyverno's `orValue` compatibility (pkg/cel/compiler/env.go, OrValueCompatEnvOptions), as a source rewrite.

Kyverno turns every `x.orValue(y)` into a call that returns `x`'s value when `x` is an optional, `y` when
`x` is an *error* (a missing field), and `x` itself when it is a plain value; policies rely on it
(`container.volumeMounts.orValue([])`). Our runtimes only have the optional `orValue`, so the plain field
selections and indexes that end the receiver are made optional: `a.b.c.orValue(y)` becomes
`a.?b.?c.orValue(y)`, `xs[0].orValue(y)` becomes `xs[?0].orValue(y)`. A missing field then gives `y` and a
present one its value, as in Kyverno. Selections before a call in the chain stay as written (the call
needs its plain receiver).
"""

from __future__ import annotations

from webhook.cel.source import Token, tokenize


def _matching_open(tokens: list[Token], close: int) -> int | None:
    depth = 0
    for k in range(close, -1, -1):
        if tokens[k].text in (")", "]", "}"):
            depth += 1
        elif tokens[k].text in ("(", "[", "{"):
            depth -= 1
            if depth == 0:
                return k
    return None


def _receiver_edits(tokens: list[Token], end: int) -> list[int]:
    """Offsets where a `?` goes: after each plain `.` and `[` of the selections ending at tokens[end]."""
    edits: list[int] = []
    j = end
    while j > 0:
        tok = tokens[j]
        if tok.kind == "ident" and tokens[j - 1].text == ".":
            edits.append(tokens[j - 1].end)
            j -= 2
        elif tok.kind == "ident" and tokens[j - 1].text == "?" and j >= 2 and tokens[j - 2].text == ".":
            j -= 3  # already optional
        elif tok.text == "]":
            opening = _matching_open(tokens, j)
            if opening is None or opening == 0 or tokens[opening - 1].kind not in ("ident", "op"):
                break
            if tokens[opening - 1].text not in (")", "]") and tokens[opening - 1].kind != "ident":
                break  # a list literal, not an index
            if tokens[opening + 1].text != "?":
                edits.append(tokens[opening].end)
            j = opening - 1
        else:
            break
    return edits


def rewrite_or_value(source: str, tokens: list[Token] | None = None) -> str:
    tokens = tokens if tokens is not None else tokenize(source)
    offsets: set[int] = set()
    for i, tok in enumerate(tokens):
        if (tok.text == "orValue" and i >= 2 and tokens[i - 1].text == "." and i + 1 < len(tokens)
                and tokens[i + 1].text == "("):
            offsets.update(_receiver_edits(tokens, i - 2))
    if not offsets:
        return source
    out, last = [], 0
    for offset in sorted(offsets):
        out.append(source[last:offset])
        out.append("?")
        last = offset
    out.append(source[last:])
    return "".join(out)
