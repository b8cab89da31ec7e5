"""`x.orValue(y)` on a receiver that is not an optional, as source rewrites (our runtimes have only the optional
overload).

cel-go (and Kubernetes with it) returns such a receiver as it is: its value, or its error. Kyverno's
`OrValueCompatEnvOptions` (pkg/cel/compiler/env.go) routes every `x.orValue(y)` through a function that returns
an optional's value or `y`, and a plain `x` as it is. Its branch for an error `x` never runs: the function is
strict, so a missing field (`container.volumeMounts.orValue([])` without volumeMounts) is an error there too, as
`kyverno test` shows. Both are `rewrite_plain_or_value`; Kyverno's environment adds `variables.x.orValue(y)` on a
plain variable (`rewrite_kyverno_or_value`).
"""

from __future__ import annotations

from webhook.cel.source import Token, _edit, _matching_open, tokenize


def _plain_receiver(tokens: list[Token], end: int) -> bool:
    """Whether the receiver ending at tokens[end] is a chain of plain selections and indexes (at least one) on an
    identifier other than `variables`, or on a call's or a parenthesized expression's result: such a chain never
    yields an optional from JSON data (and a field of an optional cannot be selected without `.?`)."""
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
            if tokens[opening - 1].kind != "ident" and tokens[opening - 1].text not in ("]", ")"):
                return False  # a list literal
            j, steps = opening - 1, steps + 1
        elif tok.kind == "ident":
            before = tokens[j - 1].text if j > 0 else ""
            return steps > 0 and tok.text != "variables" and before not in (".", "?")
        elif tok.text == ")":
            return steps > 0  # `f(x).items`, `(e)[0]`
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


def _after_optional(tokens: list[Token], end: int) -> list[int]:
    """Where a `?` makes the plain selections `.f` that follow a `.?` in the receiver ending at tokens[end] optional
    ones: `a.?b.c` is `a.?b.?c` in CEL (a selection on an optional is an optional selection), and our Python form
    (webhook.cel.to_python) reads only the second spelling. Empty when the receiver has no `.?` before them."""
    edits: list[int] = []
    j = end
    while j >= 2 and tokens[j].kind == "ident":
        if tokens[j - 1].text == "." and tokens[j - 2].text != "?":
            edits.append(tokens[j - 1].end)
            j -= 2
        elif tokens[j - 1].text == "?" and j >= 3 and tokens[j - 2].text == ".":
            return edits
        else:
            break
    return []


def rewrite_kyverno_or_value(source: str, tokens: list[Token] | None = None, bound_variables: bool = False) -> str:
    """Kyverno's environment, for an expression evaluated on its own: plain chains as `rewrite_plain_or_value`, and a
    variable read `variables.x.orValue(y)` becomes `variables.?x.orValue(y)`, so that a plain variable's value is
    returned as Kyverno returns it. A variable whose value is an optional cannot be held between expressions (its
    evaluation fails; a read of it through `variables.?x` reports that failure: webhook.families.cel.scope); where the
    variables are bound into the expression (webhook.cel.inline) it can, and `variables.x.orValue(y)` stays the
    optional's `orValue` there (`bound_variables`). Selections after a `.?` are spelled `.?` (`_after_optional`)."""
    text = rewrite_plain_or_value(source, tokens)
    tokens = tokenize(text) if tokens is None or text != source else tokens
    offsets: list[int] = []
    for i, tok in enumerate(tokens):
        if not (tok.text == "orValue" and i >= 4 and tokens[i - 1].text == "." and i + 1 < len(tokens)
                and tokens[i + 1].text == "("):
            continue
        if (not bound_variables and tokens[i - 2].kind == "ident" and tokens[i - 3].text == "."
                and tokens[i - 4].text == "variables"
                and (i < 5 or tokens[i - 5].text not in (".", "?"))):
            offsets.append(tokens[i - 3].end)
        else:
            offsets += _after_optional(tokens, i - 2)
    return _edit(text, [(offset, offset, "?") for offset in offsets]) if offsets else text
