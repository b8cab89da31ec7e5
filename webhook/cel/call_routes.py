"""Calls of Python functions whose result is an optional, routed through a list of at most one element.

Why: a function written in Python cannot hand either runtime an optional; its stand-in returns a list of zero
or one element and `[?0]` turns that into the optional (none, or of its element).
"""

from __future__ import annotations

from typing import Mapping

from webhook.cel.source import Token, _edit, _is_root, _matching_close


def route_optional_results(source: str, tokens: list[Token], routes: Mapping[str, str]) -> str:
    """`ns.fn(args)` -> `impl(args)[?0]` for each `ns.fn` -> `impl` of `routes`; a route named `.m` is a member
    function: `x.m(args)` -> `x.impl(args)[?0]`."""
    edits: list[tuple[int, int, str]] = []
    for i in range(1, len(tokens) - 2):
        member = routes.get(f".{tokens[i].text}") if tokens[i - 1].text == "." and tokens[i].kind == "ident" else None
        if member is not None and tokens[i + 1].text == "(":
            close = _matching_close(tokens, i + 1)
            edits.append((tokens[i].start, tokens[i].end, member))
            edits.append((tokens[close].end, tokens[close].end, "[?0]"))
    for i in range(len(tokens) - 3):
        if tokens[i].kind != "ident" or not _is_root(tokens, i) or tokens[i + 1].text != "." or tokens[i + 3].text != "(":
            continue
        impl = routes.get(f"{tokens[i].text}.{tokens[i + 2].text}")
        if impl is not None:
            close = _matching_close(tokens, i + 3)
            edits.append((tokens[i].start, tokens[i + 3].end, f"{impl}("))
            edits.append((tokens[close].start, tokens[close].end, ")[?0]"))
    return _edit(source, edits)
