"""Source-level facts and rewrites, on a CEL tokenizer (so strings and comments are never mistaken for code).

- `variable_refs`: the names used as `variables.<name>` (callers evaluate only the variables used);
- `rewrite_constructions`: Kubernetes' typed object construction (`Object{spec: Object.spec{...}}`,
  `JSONPatch{op: 'add', ...}`) into map literals, so both runtimes return plain dicts;
- `comprehension_depth` and `bind_count` for the compile-time limits;
- `add_iteration_ticks`: a budget call in every comprehension body (for the pure-Python backend, whose
  loops cannot otherwise be bounded; the C++ runtime has its own iteration budget);
- `canonical`: a text without its parentheses that change nothing, the key under which the fused programs
  share one binding of an expression that policies write alike.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from webhook.model.quickinit import frozen_dataclass

_TOKEN = re.compile(r"""
    (?P<space>\s+|//[^\n]*)
  | (?P<string>(?:[rR][bB]?|[bB][rR]?)?(?:'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"|'(?:\\.|[^\\'\n])*'|"(?:\\.|[^\\"\n])*"))
  | (?P<number>0[xX][0-9a-fA-F]+[uU]?|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[uU]?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>==|!=|<=|>=|&&|\|\||[-+*/%!<>?:.,()\[\]{}])
""", re.VERBOSE | re.DOTALL)

_KEYWORDS = frozenset({"in", "true", "false", "null"})
# the comprehensions (sortBy and the two-variable forms become the first five: webhook.cel.comprehensions)
MACROS = frozenset({"all", "exists", "exists_one", "map", "filter", "existsOne", "transformList", "transformMap",
                    "transformMapEntry", "sortBy"})


@frozen_dataclass
class Token:
    kind: str
    text: str
    start: int
    end: int


def tokenize(source: str) -> list[Token]:
    """Raise ValueError at the first character that starts no CEL token."""
    tokens: list[Token] = []
    pos = 0
    while pos < len(source):
        match = _TOKEN.match(source, pos)
        if match is None:
            raise ValueError(f"unexpected character {source[pos]!r} at offset {pos}")
        kind = match.lastgroup or ""
        if kind != "space":
            tokens.append(Token(kind, match.group(), pos, match.end()))
        pos = match.end()
    return tokens


def opens_call(tokens: list[Token], i: int) -> bool:
    """Whether the `(` at `i` opens a call's arguments (`f(`, `.m(`) rather than a group (`x in (`)."""
    return i > 0 and tokens[i - 1].kind == "ident" and tokens[i - 1].text not in _KEYWORDS


def _is_root(tokens: list[Token], i: int) -> bool:
    """An identifier not reached through `.` or `.?`, i.e. a variable or function name, not a field."""
    if i == 0:
        return True
    before = tokens[i - 1].text
    return before != "." and not (before == "?" and i >= 2 and tokens[i - 2].text == ".")


def root_identifiers(tokens: list[Token]) -> frozenset[str]:
    """Identifiers not reached through `.` or `.?`: the variables and namespaces an expression names (`http`)."""
    return frozenset(tok.text for i, tok in enumerate(tokens) if tok.kind == "ident" and _is_root(tokens, i))


def variable_refs(tokens: list[Token]) -> tuple[frozenset[str], bool]:
    """Names read as variables.x / variables.?x / variables['x']; the flag is set when `variables` is used whole."""
    names: set[str] = set()
    whole = False
    for i, tok in enumerate(tokens):
        if tok.kind != "ident" or tok.text != "variables" or not _is_root(tokens, i):
            continue
        rest = [t.text for t in tokens[i + 1:i + 4]]
        nxt = tokens[i + 1:i + 4]
        if rest[:1] == ["."] and len(nxt) > 1 and nxt[1].kind == "ident":
            names.add(nxt[1].text)
        elif rest[:2] == [".", "?"] and len(nxt) > 2 and nxt[2].kind == "ident":
            names.add(nxt[2].text)
        elif rest[:1] == ["["] and len(nxt) > 1 and nxt[1].kind == "string" and rest[2:3] == ["]"]:
            names.add(_string_value(nxt[1].text))
        else:
            whole = True
    return frozenset(names), whole


def _string_value(text: str) -> str:
    body = text.lstrip("rRbB")
    quote = body[:3] if body[:3] in ("'''", '"""') else body[0]
    return body[len(quote):-len(quote)]


def called_functions(tokens: list[Token]) -> set[str]:
    """Global function names called (`f(`, `ns.f(`), for naming unknown functions in errors."""
    names = set()
    for i, tok in enumerate(tokens[:-1]):
        if tokens[i + 1].text == "(" and opens_call(tokens, i + 1) and _is_root(tokens, i):
            names.add(tok.text)
    return names


def comprehension_depth(tokens: list[Token]) -> int:
    depth = best = 0
    stack: list[bool] = []
    for i, tok in enumerate(tokens):
        if tok.text in "([{" and tok.kind == "op":
            is_macro = tok.text == "(" and i >= 2 and tokens[i - 1].text in MACROS and tokens[i - 2].text == "."
            stack.append(is_macro)
            depth += is_macro
            best = max(best, depth)
        elif tok.text in ")]}" and tok.kind == "op" and stack:
            depth -= stack.pop()
    return best


def bind_count(tokens: list[Token]) -> int:
    return sum(1 for i, t in enumerate(tokens[:-2]) if t.text == "cel" and tokens[i + 1].text == "." and tokens[i + 2].text == "bind")


def _type_name_start(tokens: list[Token], i: int) -> int | None:
    """Index where the qualified type name ending just before `{` at i starts, or None for a map literal."""
    j = i - 1
    if j < 0 or tokens[j].kind != "ident" or tokens[j].text in _KEYWORDS:
        return None
    while j >= 2 and tokens[j - 1].text == "." and tokens[j - 2].kind == "ident":
        j -= 2
    if j >= 1 and tokens[j - 1].text == ".":  # leading-dot absolute name
        j -= 1
    return j


def rewrite_constructions(source: str, tokens: list[Token]) -> str:
    """`Type.name{field: v, ?opt: o}` -> `dyn({'field': v, ?'opt': o})`; map literals are left alone.

    `dyn(...)` keeps what a typed object allows: `cond ? JSONPatch{...} : null` type-checks as it does
    for Kubernetes' message types, where a bare map literal and `null` would not.
    """
    edits: list[tuple[int, int, str]] = []
    frames: list[bool] = []  # per open bracket: is it a message construction brace?
    expect_field = False
    for i, tok in enumerate(tokens):
        if tok.kind == "op" and tok.text in "([{":
            start = _type_name_start(tokens, i) if tok.text == "{" else None
            frames.append(start is not None)
            if start is not None:
                edits.append((tokens[start].start, tok.start, "dyn("))
            expect_field = start is not None
            continue
        if tok.kind == "op" and tok.text in ")]}":
            if frames and frames.pop():
                edits.append((tok.end, tok.end, ")"))
            expect_field = False
            continue
        if tok.text == "," and frames and frames[-1]:
            expect_field = True
            continue
        if expect_field and tok.kind == "ident" and i + 1 < len(tokens) and tokens[i + 1].text == ":":
            edits.append((tok.start, tok.end, repr(tok.text)))
        if not (expect_field and tok.text == "?"):
            expect_field = False
    return _edit(source, edits)


def add_iteration_ticks(source: str, tokens: list[Token], tick: str) -> str:
    """Wrap the body (last argument) of every comprehension macro in `(tick() ? (body) : false)`."""
    edits: list[tuple[int, str]] = []
    for i, tok in enumerate(tokens):
        if not (tok.text == "(" and i >= 2 and tokens[i - 1].text in MACROS and tokens[i - 2].text == "."):
            continue
        depth, last_comma, j = 0, None, i
        for j in range(i, len(tokens)):
            text = tokens[j].text if tokens[j].kind == "op" else ""
            if text in ("(", "[", "{"):
                depth += 1
            elif text in (")", "]", "}"):
                depth -= 1
                if depth == 0:
                    break
            elif text == "," and depth == 1:
                last_comma = j
        if last_comma is None:
            continue
        edits.append((tokens[last_comma].end, f" ({tick}() ? ("))
        edits.append((tokens[j].start, ") : false)"))
    out, last = [], 0
    for pos, text in sorted(edits, key=lambda e: e[0]):
        out.append(source[last:pos] + text)
        last = pos
    return "".join(out) + source[last:]


_CLOSE_TO_OPEN = {")": "(", "]": "[", "}": "{"}
ACCUMULATING = frozenset({"map", "filter"})


def _matching_open(tokens: list[Token], close: int) -> int:
    depth = 0
    for j in range(close, -1, -1):
        text = tokens[j].text if tokens[j].kind == "op" else ""
        if text in _CLOSE_TO_OPEN:
            depth += 1
        elif text in ("(", "[", "{"):
            depth -= 1
            if depth == 0:
                return j
    raise ValueError("unbalanced brackets")


def receiver_start(tokens: list[Token], end: int) -> int:
    """First token of the postfix chain ending at `end` (`a.b[0].f(x)`, `[1, 2]`, `(x + y)`)."""
    j = end
    while True:
        tok = tokens[j]
        if tok.kind == "op" and tok.text in _CLOSE_TO_OPEN:
            j = _matching_open(tokens, j)
            if tokens[j].text == "(" and opens_call(tokens, j):
                j -= 1          # a call: f(...) or .m(...)
            elif tokens[j].text == "{" and _type_name_start(tokens, j) is not None:
                j = _type_name_start(tokens, j)
            elif tokens[j].text == "[" and j and (tokens[j - 1].kind in ("string", "number")
                                                  or tokens[j - 1].kind == "ident" and tokens[j - 1].text not in _KEYWORDS
                                                  or tokens[j - 1].text in (")", "]", "}")):
                j -= 1          # an index: continue with what is indexed
                continue
        if j >= 1 and tokens[j - 1].text == "?" and j >= 2 and tokens[j - 2].text in (".", "["):
            j -= 1              # .?field
        if j >= 1 and tokens[j - 1].text == "." and j >= 2:
            j -= 2
            continue
        return j


def _wrap(source: str, spans: list[tuple[int, int, str, str]]) -> str:
    """Insert prefix/suffix around token spans; nested spans nest (outer prefix first, inner suffix first)."""
    edits = []
    for start, end, prefix, suffix in spans:
        edits.append((start, 1, start - end, prefix))
        edits.append((end, 0, end - start, suffix))
    out, last = [], 0
    for pos, _, _, text in sorted(edits):
        out.append(source[last:pos] + text)
        last = pos
    return "".join(out) + source[last:]


def guard_accumulating_ranges(source: str, tokens: list[Token], limit: int, refuse: str) -> str:
    """`R.map(...)` -> `cel.bind(__qm_rN, R, size(__qm_rN) <= limit ? __qm_rN : refuse(size(__qm_rN))).map(...)`.

    Why: the C++ runtime copies the accumulated list on every step of `map`/`filter`, so their cost is
    quadratic in the range size; capping the range bounds a comprehension to a fraction of a second.
    """
    spans = []
    for n, i in enumerate(i for i, t in enumerate(tokens)
                          if t.text == "(" and i >= 3 and tokens[i - 1].text in ACCUMULATING and tokens[i - 2].text == "."):
        start, var = receiver_start(tokens, i - 3), f"__qm_r{n}"
        spans.append((tokens[start].start, tokens[i - 3].end, f"cel.bind({var}, ",
                      f", size({var}) <= {limit} ? {var} : {refuse}(size({var})))"))
    return _wrap(source, spans)


def _presence_receivers(tokens: list[Token]) -> list[tuple[int, int]]:
    """(first, last) token of every receiver of `.?f`, `[?k]` and `has(R.f)`."""
    found = []
    for i, tok in enumerate(tokens):
        if tok.text == "?" and i >= 2 and tokens[i - 1].text in (".", "[") and tokens[i - 1].kind == "op":
            end = i - 2
            found.append((receiver_start(tokens, end), end))
        elif tok.text == "has" and _is_root(tokens, i) and i + 1 < len(tokens) and tokens[i + 1].text == "(":
            close = _matching_close(tokens, i + 1)
            if close - i >= 5 and tokens[close - 2].text == "." and tokens[close - 1].kind == "ident":
                found.append((i + 2, close - 3))
    return found


def presence_tests_on_scalars(source: str, tokens: list[Token]) -> str:
    """`R.?f`, `R[?k]`, `has(R.f)` with R not a map or list: absent, as cel-go (and so Kubernetes) has it.

    cel-go answers a presence test on null or a scalar with "not present"; the C++ runtime raises
    "no matching overload". So R is bound and kept when it is a map, a list or an optional of one; a
    present optional of anything else becomes none, anything else `{}` (a YAML `metadata:` with no value
    is null, and Kyverno's `metadata.?annotations` must then be none).
    """
    spans = []
    for n, (first, last) in enumerate(_presence_receivers(tokens)):
        p, d = f"__qm_p{n}", f"dyn(__qm_p{n})"   # dyn: the checker may know R's static type
        container = f"(type({p}) == map || type({p}) == list)"
        inner = f"(type({d}.value()) == map || type({d}.value()) == list)"
        keep_optional = f"(!{d}.hasValue() || {inner} ? {d} : dyn(optional.none()))"
        spans.append((tokens[first].start, tokens[last].end, f"cel.bind({p}, ",
                      f", {container} ? {d} : type({p}) == optional_type ? {keep_optional} : dyn({{}}))"))
    return _wrap(source, spans)


def _matching_close(tokens: list[Token], open_index: int) -> int:
    depth = 0
    for j in range(open_index, len(tokens)):
        text = tokens[j].text if tokens[j].kind == "op" else ""
        if text in ("(", "[", "{"):
            depth += 1
        elif text in _CLOSE_TO_OPEN:
            depth -= 1
            if depth == 0:
                return j
    raise ValueError("unbalanced brackets")


# what makes a parenthesised group more than one operand: its value would change without the parentheses
# around it (`?` only as the conditional: `.?` and `[?` select)
_OPERATORS = frozenset({"==", "!=", "<=", ">=", "&&", "||", "-", "+", "*", "/", "%", "!", "<", ">", "?", ":", ","})


def _negated_number(tokens: list[Token], start: int) -> bool:
    """Whether the group opened at `start` follows a `-` and holds a number (in any parentheses)."""
    if not (start and tokens[start - 1].text == "-"):
        return False
    first = start + 1
    while first < len(tokens) and tokens[first].text == "(" and tokens[first].kind == "op":
        first += 1
    return first < len(tokens) and tokens[first].kind == "number"


def canonical(tokens: list[Token]) -> str:
    """The text of `tokens` without the parentheses that change nothing: those around the whole text and
    those around one operand (a literal, a name, a postfix chain such as `a.?b.orValue([])`; no operator
    outside brackets). Two texts with the same canonical form parse to the same tree, so a key for
    expressions written alike (`(a + (b))`, `((a + b))` and `a + b` share one). One pass: policies are user text.
    Kept: a call's parentheses, and `-(1)` and `-((1))` (the parser reads `-1` as one literal, `-(1)` as a
    negation)."""
    drop: set[int] = set()
    close_of: dict[int, int] = {}
    # per open bracket: [its index, whether it groups (a `(` not after a name: not a call), an operator seen]
    open_: list[list[Any]] = []
    for i, tok in enumerate(tokens):
        text = tok.text if tok.kind == "op" else ""
        if text in ("(", "[", "{"):
            grouping = text == "(" and not opens_call(tokens, i)
            open_.append([i, grouping, False])
        elif text in _CLOSE_TO_OPEN:
            if not open_:
                raise ValueError("unbalanced brackets")
            start, grouping, operated = open_.pop()
            close_of[start] = i
            if grouping and not operated and not _negated_number(tokens, start):
                drop.update((start, i))
        elif open_ and not open_[-1][2]:
            if text in _OPERATORS and not (text == "?" and i and tokens[i - 1].text in (".", "[")) \
                    or tok.kind == "ident" and tok.text == "in":
                open_[-1][2] = True
    if open_:
        raise ValueError("unbalanced brackets")
    first, last = 0, len(tokens) - 1
    while first < last and tokens[first].text == "(" and tokens[first].kind == "op" and close_of.get(first) == last:
        drop.update((first, last))
        first, last = first + 1, last - 1
    return " ".join(tok.text for i, tok in enumerate(tokens) if i not in drop)


def _edit(source: str, edits: list[tuple[int, int, str]]) -> str:
    """`source` with each (start, end) span replaced by its text; spans do not overlap."""
    out, last = [], 0
    for start, end, text in sorted(edits):
        out.append(source[last:start] + text)
        last = end
    return "".join(out) + source[last:]


def route_string_conversions(source: str, tokens: list[Token], text_fn: str) -> str:
    """`string(x)` -> `cel.bind(__qm_sN, x, type(__qm_sN) == map ? text_fn(dyn(__qm_sN)) : string(dyn(__qm_sN)))`.

    Why: Kubernetes defines string() for its opaque types (`string(ip('::1'))`); here they are tagged
    maps, and the runtime's own `string` cannot take another overload. Other values keep the native path.
    """
    edits: list[tuple[int, int, str]] = []
    calls = [i for i, t in enumerate(tokens[:-1])
             if t.kind == "ident" and t.text == "string" and tokens[i + 1].text == "(" and _is_root(tokens, i)]
    for n, i in enumerate(calls):
        close = _matching_close(tokens, i + 1)
        var = f"__qm_s{n}"
        edits.append((tokens[i].start, tokens[i + 1].end, f"cel.bind({var}, "))
        edits.append((tokens[close].start, tokens[close].end,
                      f", type({var}) == map ? {text_fn}(dyn({var})) : string(dyn({var})))"))
    return _edit(source, edits)
