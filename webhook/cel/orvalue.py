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


def _plain_receiver(tokens: list[Token], end: int) -> bool:
    """Whether the receiver ending at tokens[end] is a chain of plain selections and indexes (at least one) on an
    identifier other than `variables`: such a chain never yields an optional from JSON data."""
    j, steps = end, 0
    while j >= 0:
        tok = tokens[j]
        if tok.kind == "ident" and j > 0 and tokens[j - 1].text == ".":
            if j >= 2 and tokens[j - 2].text == "?":
                return False  # `.?field`: an optional chain
            j, steps = j - 2, steps + 1
        elif tok.text == "]":
            opening = _matching_open(tokens, j)
            if opening is None or opening == 0 or tokens[opening + 1].text == "?":
                return False
            if tokens[opening - 1].kind != "ident" and tokens[opening - 1].text != "]":
                return False  # a list literal, or an index on a call or a parenthesized expression
            j, steps = opening - 1, steps + 1
        elif tok.kind == "ident":
            before = tokens[j - 1].text if j > 0 else ""
            return steps > 0 and tok.text != "variables" and before not in (".", "?")
        else:
            return False
    return False


def _call_end(tokens: list[Token], opening: int) -> int | None:
    depth = 0
    for k in range(opening, len(tokens)):
        if tokens[k].text in ("(", "[", "{"):
            depth += 1
        elif tokens[k].text in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return k
    return None


def rewrite_plain_or_value(source: str, tokens: list[Token] | None = None) -> str:
    """cel-go's `orValue` (and Kubernetes with it) returns a receiver that is not an optional as it is, its value or
    its error, without evaluating the alternative; our runtimes have only the optional overload. A call whose
    receiver is a plain chain (`container.volumeMounts.orValue([])`, `object.spec.x[0].orValue(y)`) is dropped to
    the receiver. Receivers that may be optionals stay: any `.?`/`[?` in the chain, a call, `variables.x`. Left
    out: an iteration variable over a list of optionals (`[a.?b].all(o, o.f.orValue(1))`), which JSON never gives."""
    tokens = tokens if tokens is not None else tokenize(source)
    cuts: list[tuple[int, int]] = []
    for i, tok in enumerate(tokens):
        if (tok.text == "orValue" and i >= 2 and tokens[i - 1].text == "." and i + 1 < len(tokens)
                and tokens[i + 1].text == "(" and _plain_receiver(tokens, i - 2)):
            close = _call_end(tokens, i + 1)
            if close is not None:
                cuts.append((tokens[i - 1].start, tokens[close].end))
    if not cuts:
        return source
    out, last = [], 0
    for start, end in cuts:
        if start < last:
            continue  # inside an alternative already dropped
        out.append(source[last:start])
        last = end
    out.append(source[last:])
    return "".join(out)
