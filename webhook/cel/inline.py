"""Policy variables folded into the expression that reads them, as `cel.bind`, for the C++ runtime.

Why: a variable's value would otherwise leave the runtime (converted to Python) and re-enter it in a new
activation with the whole request (converting a pod in and its container list back costs more than the
checks that read them: `load-tests/bench_cel.py`). Bound
in place, the variables are computed inside the runtime and the expression runs on the request's one
shared activation. Callers keep the lazy, one-at-a-time evaluation as the reference: any error of the
bound form is re-run there, so messages ("variable 'x' failed: ...") and outcomes stay the same.

Only plain reads fold: `variables.x` and `variables.?x`; `variables` used whole, `variables['x']` and
`has(variables.x)` do not, nor a variable calling a function that reads outside the request or has
effects (lookups, HTTP, generator.Apply, time, random), which must run once, not once per expression.
"""

from __future__ import annotations

from typing import Sequence

from webhook.cel.orvalue import rewrite_kyverno_or_value
from webhook.cel.source import Token, tokenize

PREFIX = "qm__v_"
# roots of functions that look beyond the request or have effects (`http.Get(...)`, `random()`): a
# variable calling one is not folded. A name reached as a field (`rule.http`, `request.resource`) is no call.
IMPURE = frozenset({"generator", "http", "resource", "globalContext", "random", "time", "imagedata", "GetMetadata"})
_ANYWHERE = frozenset({"GetMetadata"})  # impure however it is reached
_OPERAND_END = frozenset({")", "]", "}"})


def _is_root(tokens: list[Token], i: int) -> bool:
    return i == 0 or tokens[i - 1].text != "."


def _substitute(text: str) -> str | None:
    """`variables.x` -> the bound name, `variables.?x` -> `optional.of(<bound>)`; None if another use remains."""
    tokens = tokenize(text)
    out, last = [], 0
    for i, tok in enumerate(tokens):
        if tok.kind != "ident" or tok.text != "variables" or not _is_root(tokens, i):
            continue
        if i >= 2 and tokens[i - 1].text == "(" and tokens[i - 2].text == "has":
            return None
        nxt = [t.text for t in tokens[i + 1:i + 3]]
        if nxt[:1] == ["."] and len(tokens) > i + 2 and tokens[i + 2].kind == "ident":
            out += [text[last:tok.start], PREFIX + tokens[i + 2].text]
            last = tokens[i + 2].end
        elif nxt[:2] == [".", "?"] and len(tokens) > i + 3 and tokens[i + 3].kind == "ident":
            out += [text[last:tok.start], f"optional.of({PREFIX}{tokens[i + 3].text})"]
            last = tokens[i + 3].end
        else:
            return None
    out.append(text[last:])
    return "".join(out)


def _field(tokens: list[Token], i: int) -> bool:
    """tokens[i] selected from a value (`x.name`, `x.?name`), not a root name (`name`, absolute `.name`)."""
    j = i - 1
    if j >= 1 and tokens[j].text == "?" and tokens[j - 1].text == ".":
        j -= 1
    if j < 1 or tokens[j].text != ".":
        return False
    before = tokens[j - 1]
    return before.kind in ("string", "number") or before.text in _OPERAND_END or (
        before.kind == "ident" and before.text != "in")


def _callable(tokens: list[Token], i: int) -> bool:
    """A root name that may be a call or the namespace of one: `http.Get(`, `random(`, `(http).Get(`; not
    a comprehension variable of that name in `resource == 'x'` or `exists(resource, ...)`."""
    return i + 1 >= len(tokens) or tokens[i + 1].text in (".", "(", ")")


def pure(text: str) -> bool:
    tokens = tokenize(text)
    return not any(t.kind == "ident" and t.text in IMPURE
                   and (t.text in _ANYWHERE or (not _field(tokens, i) and _callable(tokens, i)))
                   for i, t in enumerate(tokens))


def fold(expression: str, bindings: Sequence[tuple[str, str]], or_value_compat: bool
         ) -> tuple[str, list[tuple[str, str]]] | None:
    """(the expression, its bindings as (bound name, value text)), every `variables.x` read replaced by its
    bound name; None when it cannot be folded faithfully. Texts are rewritten for Kyverno's orValue first (plain chains)
    (as each would be alone)."""
    def prepare(text: str) -> str | None:
        return _substitute(rewrite_kyverno_or_value(text, bound_variables=True) if or_value_compat else text)

    body = prepare(expression)
    if body is None:
        return None
    bound = []
    for name, text in bindings:
        if not name.isidentifier() or not pure(text):
            return None
        value = prepare(text)
        if value is None:
            return None
        bound.append((PREFIX + name, value))
    return body, bound


def nest(body: str, bound: Sequence[tuple[str, str]]) -> str:
    """`body` inside `cel.bind(name, (value), ...)` for each (name, value), the first outermost."""
    for name, value in reversed(bound):
        body = f"cel.bind({name}, ({value}), ({body}))"
    return body


def bind_variables(expression: str, bindings: Sequence[tuple[str, str]], or_value_compat: bool) -> str | None:
    """`expression` with `bindings` ((name, expression), in evaluation order) bound around it; None when
    it cannot be folded faithfully. Texts are rewritten for Kyverno's orValue first (plain chains; a bound variable may hold an optional, so
    `variables.x.orValue(y)` stays the optional's)."""
    folded = fold(expression, bindings, or_value_compat)
    return None if folded is None else nest(*folded)
