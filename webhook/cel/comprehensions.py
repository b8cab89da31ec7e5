"""Two-variable comprehensions and the lists extension's `sortBy`, as source rewrites into one-variable macros.

Kubernetes 1.34 stores expressions with cel-go's two-variable comprehensions (`all(i, v, p)`,
`exists(i, v, p)`, `existsOne(i, v, p)`, `transformList(i, v, [filter,] e)`, `transformMap(k, v, [filter,] e)`,
`transformMapEntry(k, v, [filter,] e)`) and lists v3's `sortBy(x, key)`. Neither runtime has them, so they
are rewritten before compiling into what both have:

- `R.all(i, v, p)` -> `__qm_keys(R).all(__qm_iN, p')`, where `__qm_keys` gives a list's indexes or a map's
  keys and `p'` is `p` with every free `i` renamed `__qm_iN` (a fresh name) and every free `v` read as
  `(R)[__qm_iN]` (`exists`, `existsOne` -> `exists_one` alike);
- `R.transformList(i, v, f, e)` -> `__qm_keys(R).filter(__qm_iN, f').map(__qm_iN, e')`;
- `R.transformMap(k, v, f, e)` -> `__qm_merge(__qm_keys(R).filter(..., f').map(__qm_iN, {__qm_iN: e'}))`, and
  `transformMapEntry` merges the maps `e'` gives (`__qm_merge` refuses a key given twice, as cel-go does);
- `R.sortBy(x, key)` -> `__qm_sort_by(R, (R).map(x, key))`, cel-go's own expansion.

A receiver that calls anything (`object.metadata.?labels.orValue({})`, a transformMap's result) is read once
instead: the comprehension ranges over `__qm_pairs(R)`, `[key, value]` lists, and the body reads `i` and `v` as
the pair's elements (both then typed dyn: a type error on them is found when evaluated).

Why substitution, not `cel.bind`: cel.bind is not in Kubernetes' admission environment (ours refuses it
there), the pure-Python backend has none, and the C++ runtime misreads a bind evaluated after a
comprehension at the same nesting level (docs/cel.md). `(R)[i]` keeps `v` typed as `R`'s elements, so a
type error on `v` is found at compile time as Kubernetes finds it; it reads `R` once per element, which is
cheap for a field path or a literal, the only receivers written so.

A use of `v` inside a scope that binds a name of the receiver again
(`x.all(i, v, [1].exists(x, v == x))`) cannot be written so: refused with a message saying to rename it.
"""

from __future__ import annotations

from webhook.cel.errors import CelError
from webhook.cel.source import Token, _edit, _matching_close, receiver_start, tokenize

KEYS = "__qm_keys"
PAIRS = "__qm_pairs"
MERGE = "__qm_merge"
SORT_BY = "__qm_sort_by"
# name -> (argument counts accepted, the one-variable macro it becomes)
_TWO_VARIABLE = {"all": ((3,), "all"), "exists": ((3,), "exists"), "existsOne": ((3,), "exists_one"),
                 "transformList": ((3, 4), "map"), "transformMap": ((3, 4), "map"),
                 "transformMapEntry": ((3, 4), "map")}
_BINDERS = frozenset({"all", "exists", "exists_one", "existsOne", "map", "filter", "transformList", "transformMap",
                      "transformMapEntry", "sortBy"})
NAMES = frozenset(_TWO_VARIABLE) | {"sortBy"}


def _arguments(tokens: list[Token], open_index: int) -> tuple[list[tuple[int, int]], int]:
    """The top-level arguments of the call opened at `open_index` as (first, last) token indexes, and its `)`."""
    close = _matching_close(tokens, open_index)
    spans, start, depth = [], open_index + 1, 0
    for j in range(open_index + 1, close):
        text = tokens[j].text if tokens[j].kind == "op" else ""
        if text in ("(", "[", "{"):
            depth += 1
        elif text in (")", "]", "}"):
            depth -= 1
        elif text == "," and depth == 0:
            spans.append((start, j - 1))
            start = j + 1
    if start <= close - 1:
        spans.append((start, close - 1))
    return spans, close


def _single_ident(tokens: list[Token], span: tuple[int, int]) -> str | None:
    first, last = span
    return tokens[first].text if first == last and tokens[first].kind == "ident" else None


def _find(tokens: list[Token]) -> int | None:
    """The `.` of the last call to rewrite: its arguments then hold none (they start after it)."""
    for i in range(len(tokens) - 3, 0, -1):
        if tokens[i].text == "." and tokens[i + 1].kind == "ident" and tokens[i + 1].text in NAMES \
                and tokens[i + 2].text == "(":
            spans, _ = _arguments(tokens, i + 2)
            name = tokens[i + 1].text
            if name == "sortBy" and len(spans) == 2 and _single_ident(tokens, spans[0]):
                return i
            if name != "sortBy" and len(spans) in _TWO_VARIABLE[name][0] \
                    and _single_ident(tokens, spans[0]) and _single_ident(tokens, spans[1]):
                return i
    return None


def _bound_names(tokens: list[Token], first: int, last: int) -> list[tuple[str, int, int]]:
    """(name, first, last token of its scope) for each variable a macro or cel.bind within first..last binds."""
    bound = []
    for j in range(first, last):
        if tokens[j].text != "(" or j < 2 or tokens[j - 2].text != ".":
            continue
        macro = tokens[j - 1].text
        if not (macro in _BINDERS or macro == "bind" and j >= 3 and tokens[j - 3].text == "cel"):
            continue
        spans, close = _arguments(tokens, j)
        count = 2 if macro in _TWO_VARIABLE and len(spans) >= 3 else 1
        names = [_single_ident(tokens, s) for s in spans[:count]]
        bound.extend((n, j, close) for n in names if n)
    return bound


def _selected(tokens: list[Token], j: int) -> bool:
    """Whether the identifier at j is a field (`.f`, `.?f`), not a variable."""
    return j > 0 and (tokens[j - 1].text == "." or tokens[j - 1].text == "?" and j > 1 and tokens[j - 2].text == ".")


def _substitute(source: str, tokens: list[Token], span: tuple[int, int], name: str, text: str,
                protected: set[str]) -> str:
    """The text of tokens span[0]..span[1] with each free use of `name` replaced by `text`, which reads the
    names `protected`: a use inside a scope that binds one of them again is refused (it would read that one)."""
    first, last = span
    bound = _bound_names(tokens, first, last + 1)
    shadowed = [(a, b) for n, a, b in bound if n == name]
    hidden = [(n, a, b) for n, a, b in bound if n in protected]
    edits = []
    for j in range(first, last + 1):
        tok = tokens[j]
        if tok.kind != "ident" or tok.text != name or _selected(tokens, j):
            continue
        if j + 1 < len(tokens) and tokens[j + 1].text == "(":
            continue  # a function of that name
        if any(a < j <= b for a, b in shadowed):
            continue
        clash = sorted({n for n, a, b in hidden if a < j <= b})
        if clash:
            raise CelError(f"in a two-variable comprehension, {name} is read where {', '.join(clash)} is bound again, "
                           f"a name it needs: rename the inner variable")
        edits.append((tok.start - tokens[first].start, tok.end - tokens[first].start, text))
    return _edit(source[tokens[first].start:tokens[last].end], edits)


def _simple(tokens: list[Token], first: int, last: int) -> bool:
    """Whether the receiver is a field path or a literal (no call): cheap to read again for every element."""
    return not any(t.text == "(" for t in tokens[first:last + 1])


def _roots(tokens: list[Token], first: int, last: int) -> set[str]:
    return {t.text for j, t in enumerate(tokens[first:last + 1], first)
            if t.kind == "ident" and not _selected(tokens, j)}


def _rewrite_one(source: str, tokens: list[Token], dot: int, fresh: str) -> str:
    """The call at `dot` rewritten; `fresh`: a name the source does not use, for the index or key."""
    name = tokens[dot + 1].text
    spans, close = _arguments(tokens, dot + 2)
    start = receiver_start(tokens, dot - 1)
    receiver = source[tokens[start].start:tokens[dot - 1].end]
    if name == "sortBy":
        var, key = (source[tokens[a].start:tokens[b].end] for a, b in spans)
        new = f"{SORT_BY}(({receiver}), ({receiver}).map({var}, {key}))"
    else:
        index, value = (_single_ident(tokens, s) or "" for s in spans[:2])
        bodies = []
        if _simple(tokens, start, dot - 1):
            roots = _roots(tokens, start, dot - 1)
            for span in spans[2:]:
                renamed = _substitute(source, tokens, span, index, fresh, set())
                inner = tokenize(renamed)
                bodies.append(_substitute(renamed, inner, (0, len(inner) - 1), value, f"({receiver})[{fresh}]", roots))
            keys = f"{KEYS}({receiver})"
        else:  # read once: ranged over as [key, value] pairs, the body reading both from the pair
            for span in spans[2:]:
                renamed = _substitute(source, tokens, span, index, f"{fresh}[0]", set())
                inner = tokenize(renamed)
                bodies.append(_substitute(renamed, inner, (0, len(inner) - 1), value, f"{fresh}[1]", set()))
            keys = f"{PAIRS}({receiver})"
        key = fresh if keys.startswith(KEYS) else f"{fresh}[0]"
        if name in ("all", "exists", "existsOne"):
            new = f"{keys}.{_TWO_VARIABLE[name][1]}({fresh}, {bodies[0]})"
        else:
            ranged = f"{keys}.filter({fresh}, {bodies[0]})" if len(bodies) == 2 else keys
            each = bodies[-1]
            if name == "transformList":
                new = f"{ranged}.map({fresh}, {each})"
            elif name == "transformMap":
                new = f"{MERGE}({ranged}.map({fresh}, {{{key}: {each}}}))"
            else:
                new = f"{MERGE}({ranged}.map({fresh}, {each}))"
    return source[:tokens[start].start] + new + source[tokens[close].end:]


def mentions(tokens: list[Token]) -> bool:
    return any(t.kind == "ident" and t.text in NAMES for t in tokens)


def rewrite(source: str, tokens: list[Token] | None = None) -> str:
    """`source` with every two-variable comprehension and `sortBy` rewritten (the innermost first)."""
    tokens = tokens if tokens is not None else tokenize(source)
    if not mentions(tokens):
        return source
    for n in range(len(tokens)):
        dot = _find(tokens)
        if dot is None:
            return source
        source = _rewrite_one(source, tokens, dot, f"__qm_i{n}")
        tokens = tokenize(source)
    return source
