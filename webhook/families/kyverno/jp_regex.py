"""Go's regexp semantics for the JMESPath string functions: RE2 patterns, Go's Expand templates, bounded
replacement."""

from __future__ import annotations

import unicodedata
from typing import Any, Callable

from webhook.model.regex import compile_linear, go_matches

from .jp_errors import JMESPathError, check_size

MAX_MATCHES = 10_000  # replacements in one regex_replace_all call: no policy needs more on one string


def go_regex(pattern: str) -> Any:
    return compile_linear(pattern)  # Go's regexp is RE2: linear, whatever the pattern and the text


def _go_name_length(text: str) -> int:
    """How many characters at the start of `text` make a name in Go's Expand: letters, digits, underscore."""
    for length, char in enumerate(text):
        category = unicodedata.category(char)
        if not (char == "_" or category[0] == "L" or category == "Nd"):
            return length
    return len(text)


def go_expansion(regex: Any, template: str) -> Callable[[Any], str]:
    """Go's Regexp.Expand of `template` ($1, ${1}, $name, ${name}; $$ is a "$"; a group that does not exist or
    did not take part is empty; a "$" that starts no name is itself), parsed once: a function of each match
    that joins literal text and groups. (Python's and RE2's expand parse the template again at every match,
    which cost more than the match itself; and a name is Go's longest run of letters, digits and underscores,
    so "$1x" names the group "1x", not group 1 and an "x".)"""
    # literal text around each group: texts[0], groups[0], texts[1], ... (-1: a group that does not exist)
    texts: list[str] = []
    groups: list[int] = []
    literal, rest = [], template
    while True:
        before, dollar, rest = rest.partition("$")
        literal.append(before)
        if not dollar:
            break
        if rest.startswith("$"):
            literal.append("$")
            rest = rest[1:]
            continue
        brace = rest.startswith("{")
        body = rest[1:] if brace else rest
        length = _go_name_length(body)
        if length == 0 or (brace and body[length:length + 1] != "}"):
            literal.append("$")  # malformed: the "$" is text
            continue
        name, rest = body[:length], body[length + (1 if brace else 0):]
        if name.isascii() and name.isdigit() and not (name[0] == "0" and len(name) > 1) and len(name) < 9:
            group = int(name) if int(name) <= regex.groups else -1
        else:
            group = regex.groupindex.get(name, -1)
        texts.append("".join(literal))
        groups.append(group)
        literal = []
    texts.append("".join(literal))
    if not groups:
        text = texts[0]
        return lambda _match: text
    read = sorted({g for g in groups if g >= 0})  # each group read once per match: each read calls into RE2

    def expand(match: Any) -> str:
        found = {g: match[g] or "" for g in read}
        out = [texts[0]]
        for group, text in zip(groups, texts[1:]):
            out += (found.get(group, ""), text)
        return "".join(out)
    return expand


def replaced_size(text: str, old: str, new: str, count: int) -> int:
    found = text.count(old) if old else len(text) + 1
    return len(text) + (found if count < 0 else min(found, count)) * (len(new) - len(old))


def sub_limited(regex: Any, src: str, replace: Callable[[Any], str], function: str) -> str:
    """regex.sub within bounds: each match costs a call into Python, so a string of millions of matches held
    the event loop for seconds; and a replacement that quotes the source grew the result quadratically."""
    pieces, end, size = [], 0, len(src)
    for count, match in enumerate(go_matches(regex, src)):  # Go's ReplaceAllString visits these
        if count == MAX_MATCHES:
            raise JMESPathError(f"{function}: more than {MAX_MATCHES} matches")
        text = replace(match)
        size += len(text) - (match.end() - match.start())
        check_size(size, function)
        pieces += (src[end:match.start()], text)
        end = match.end()
    pieces.append(src[end:])
    return "".join(pieces)
