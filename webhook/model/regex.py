"""Regular expressions that run in time linear in the text, as Go's regexp and Kubernetes' CEL do.

Python's `re` backtracks: `^(a+)+$` against forty `a` and a `!` runs for minutes, and a wildcard of twenty
`*` is a polynomial of degree twenty. Kyverno (Go regexp) and Kubernetes' CEL (RE2) never backtrack, so a
policy that is harmless there held our event loop for ever, whether the pattern came from the policy or
from the request. RE2's syntax is Go's, which these policies are written in (no backreferences or
lookarounds: the same patterns are refused as there).
"""

from __future__ import annotations

import functools
import re
from typing import Any, Iterator

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # an invalid pattern is our error value, not a line on standard error
_DOT_ALL = re2.Options()
_DOT_ALL.log_errors = False
_DOT_ALL.dot_nl = True


@functools.lru_cache(maxsize=4096)
def compile_linear(pattern: str, dot_all: bool = False) -> Any:
    """A compiled RE2 pattern (search, fullmatch, finditer, sub like `re`'s); re.error when it is invalid,
    as `re.compile` raised, so that callers' handling stays as it was."""
    try:
        return re2.compile(pattern, options=_DOT_ALL if dot_all else _OPTIONS)
    except re2.error as exc:
        message = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise re.error(message) from None


def go_matches(compiled: Any, text: str) -> Iterator[Any]:
    """The matches Go's FindAll and ReplaceAll visit: an empty match right where the previous one ended is
    skipped (Python's finditer keeps it: `a*` over "baaac" replaced by "x" is "xbxcx" in Go, "xbxxcx" in
    Python). Lazily, so a caller can stop counting at its own bound."""
    last_end = -1
    for match in compiled.finditer(text):
        if match.start() == match.end() == last_end:
            continue
        last_end = match.end()
        yield match
