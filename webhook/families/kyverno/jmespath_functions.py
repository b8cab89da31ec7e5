"""Kyverno's custom JMESPath functions on the ``jmespath`` library, and the query entry point.

Kyverno's go-jmespath fork reports a field missing from an object as an error ("Unknown key") when the missing
field is on the top-level path of the expression (functions, comparisons, ``||`` and projections swallow it);
``query`` reproduces that so preconditions fail the same way Kyverno's do.
"""

from __future__ import annotations

import base64
import json
import posixpath
import random as _random
import re
import unicodedata
from functools import lru_cache
from typing import Any, Callable

import jmespath
import yaml
from jmespath import functions
from jmespath.visitor import TreeInterpreter

from webhook.model import boundedyaml
from webhook.model.regex import compile_linear, go_matches

from . import jp_arith, jp_budget, jp_time
from .gotypes import is_number, sprint, wildcard_match
from .jp_semver import semver_matches


MAX_TEXT = 8 << 20  # characters a function may build: beyond any rendering of a 3 MiB request
MAX_MATCHES = 10_000  # replacements in one regex_replace_all call (~30 ms, RE2's Python wrapper paying ~3 us a
# match): no policy needs more on one string


class JMESPathError(ValueError):
    """A query that Kyverno would reject: syntax, types, or a function's own error."""


class NotFound(JMESPathError):
    def __init__(self, key: str) -> None:
        super().__init__(f'Unknown key "{key}" in path')
        self.key = key


def _go_regex(pattern: str) -> Any:
    return compile_linear(pattern)  # Go's regexp is RE2: linear, whatever the pattern and the text


def _go_name_length(text: str) -> int:
    """How many characters at the start of `text` make a name in Go's Expand: letters, digits, underscore."""
    for length, char in enumerate(text):
        category = unicodedata.category(char)
        if not (char == "_" or category[0] == "L" or category == "Nd"):
            return length
    return len(text)


def _go_expansion(regex: Any, template: str) -> Callable[[Any], str]:
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
    read = sorted({g for g in groups if g >= 0})  # each group read once per match: RE2's reads cost ~1 us each

    def expand(match: Any) -> str:
        found = {g: match[g] or "" for g in read}
        out = [texts[0]]
        for group, text in zip(groups, texts[1:]):
            out += (found.get(group, ""), text)
        return "".join(out)
    return expand


def _check_size(size: int, function: str) -> None:
    """Refuse before building: replace_all(text, 'a', text) on a 50 kB annotation built 2.5 GB on the event loop."""
    if size > MAX_TEXT:
        raise JMESPathError(f"{function}: the result would hold more than {MAX_TEXT} characters")


def _replaced_size(text: str, old: str, new: str, count: int) -> int:
    found = text.count(old) if old else len(text) + 1
    return len(text) + (found if count < 0 else min(found, count)) * (len(new) - len(old))


def _sub_limited(regex: Any, src: str, replace: Callable[[Any], str], function: str) -> str:
    """regex.sub within bounds: RE2's Python wrapper pays ~3 us per match in Python, so a 2 MB string of
    matches held the event loop 7 s; and a replacement that quotes the source grew the result quadratically."""
    pieces, end, size = [], 0, len(src)
    for count, match in enumerate(go_matches(regex, src)):  # Go's ReplaceAllString visits these
        if count == MAX_MATCHES:
            raise JMESPathError(f"{function}: more than {MAX_MATCHES} matches")
        text = replace(match)
        size += len(text) - (match.end() - match.start())
        _check_size(size, function)
        pieces += (src[end:match.start()], text)
        end = match.end()
    pieces.append(src[end:])
    return "".join(pieces)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else sprint(value)


class KyvernoFunctions(functions.Functions):
    def call_function(self, function_name, resolved_args):
        # every function, Kyverno's and JMESPath's own, pays for the size of its arguments before it runs
        jp_budget.spend(jp_budget.argument_steps(resolved_args), f"{function_name}()")
        return super().call_function(function_name, resolved_args)

    @functions.signature({"types": ["string"]}, {"types": ["array-string"]})
    def _func_join(self, glue, items):
        # JMESPath's own join, sized first: join('', [x, x]) over chained variables doubled to gigabytes
        _check_size(len(glue) * max(len(items) - 1, 0) + sum(map(len, items)), "join")
        return glue.join(items)

    @functions.signature({"types": ["string"]}, {"types": ["string"]})
    def _func_compare(self, a, b):
        return (a > b) - (a < b)

    @functions.signature({"types": ["string"]}, {"types": ["string"]})
    def _func_equal_fold(self, a, b):
        return a.casefold() == b.casefold()

    @functions.signature({"types": ["string"]}, {"types": ["string"]}, {"types": ["string"]}, {"types": ["number"]})
    def _func_replace(self, text, old, new, count):
        _check_size(_replaced_size(text, old, new, int(count)), "replace")
        return text.replace(old, new, int(count)) if int(count) >= 0 else text.replace(old, new)

    @functions.signature({"types": ["string"]}, {"types": ["string"]}, {"types": ["string"]})
    def _func_replace_all(self, text, old, new):
        _check_size(_replaced_size(text, old, new, -1), "replace_all")
        return text.replace(old, new)

    @functions.signature({"types": ["string"]})
    def _func_to_upper(self, text):
        return text.upper()

    @functions.signature({"types": ["string"]})
    def _func_to_lower(self, text):
        return text.lower()

    @functions.signature({"types": ["string"]}, {"types": ["string"]})
    def _func_trim(self, text, cutset):
        return text.strip(cutset)

    @functions.signature({"types": ["string"]}, {"types": ["string"]})
    def _func_trim_prefix(self, text, prefix):
        return text[len(prefix):] if prefix and text.startswith(prefix) else text

    @functions.signature({"types": ["string"]}, {"types": ["string"]})
    def _func_split(self, text, sep):
        return text.split(sep) if sep else list(text)

    @functions.signature({"types": ["string"]}, {"types": ["string", "number"]}, {"types": ["string", "number"]})
    def _func_regex_replace_all(self, pattern, src, repl):
        regex = _go_regex(pattern)
        return _sub_limited(regex, _str(src), _go_expansion(regex, _str(repl)), "regex_replace_all")

    @functions.signature({"types": ["string"]}, {"types": ["string", "number"]}, {"types": ["string", "number"]})
    def _func_regex_replace_all_literal(self, pattern, src, repl):
        literal = _str(repl)
        return _sub_limited(_go_regex(pattern), _str(src), lambda _m: literal, "regex_replace_all_literal")

    @functions.signature({"types": ["string"]}, {"types": ["string", "number"]})
    def _func_regex_match(self, pattern, src):
        return _go_regex(pattern).search(_str(src)) is not None

    @functions.signature({"types": ["string"]}, {"types": ["string", "number"]})
    def _func_pattern_match(self, pattern, src):
        return wildcard_match(pattern, _str(src))

    @functions.signature({"types": ["object"]}, {"types": ["object"]})
    def _func_label_match(self, selector, labels):
        return all(labels.get(k) == v for k, v in selector.items())

    @functions.signature({"types": ["string"]})
    def _func_to_boolean(self, text):
        lowered = text.lower()
        if lowered not in ("true", "false"):
            raise JMESPathError(f"lowercase argument must be 'true' or 'false' (provided: '{text}')")
        return lowered == "true"

    @functions.signature({"types": []}, {"types": []})
    def _func_add(self, a, b):
        return _arith(jp_arith.add, a, b)

    @functions.signature({"types": ["array"]})
    def _func_sum(self, values):
        return _arith(jp_arith.total, values)

    @functions.signature({"types": []}, {"types": []})
    def _func_subtract(self, a, b):
        return _arith(jp_arith.subtract, a, b)

    @functions.signature({"types": []}, {"types": []})
    def _func_multiply(self, a, b):
        return _arith(jp_arith.multiply, a, b)

    @functions.signature({"types": []}, {"types": []})
    def _func_divide(self, a, b):
        return _arith(jp_arith.divide, a, b)

    @functions.signature({"types": []}, {"types": []})
    def _func_modulo(self, a, b):
        return _arith(jp_arith.modulo, a, b)

    @functions.signature({"types": ["number"]}, {"types": ["number"]})
    def _func_round(self, value, digits):
        if int(digits) > 308:  # past a double's range (as the error below says), and 10 ** 1e8 took minutes
            raise JMESPathError(f"round: {int(digits)} digits is beyond a double")
        factor = 10 ** int(digits)
        result = int(abs(value) * factor + 0.5) / factor
        return -result if value < 0 else result

    @functions.signature({"types": ["string"]})
    def _func_base64_decode(self, text):
        try:
            return base64.b64decode(text, validate=True).decode("utf-8", "replace")
        except ValueError as exc:
            raise JMESPathError(f"base64_decode: {exc}") from exc

    @functions.signature({"types": ["string"]})
    def _func_base64_encode(self, text):
        return base64.b64encode(text.encode()).decode()

    @functions.signature({"types": ["string"]}, {"types": ["string"]}, {"types": ["string"]})
    def _func_time_since(self, layout, start, end):
        return _timed(jp_time.time_since, layout, start, end)

    @functions.signature()
    def _func_time_now(self):
        return jp_time.format_rfc3339(jp_time.now().astimezone())

    @functions.signature()
    def _func_time_now_utc(self):
        return jp_time.format_rfc3339(jp_time.now())

    @functions.signature({"types": ["string"]}, {"types": ["string"]})
    def _func_time_add(self, start, duration):
        return _timed(jp_time.time_add, start, duration)

    @functions.signature({"types": ["string"]}, {"types": ["string"]})
    def _func_time_parse(self, layout, text):
        return _timed(lambda: jp_time.format_rfc3339(jp_time.parse_time(layout, text)))

    @functions.signature({"types": ["string"]})
    def _func_time_utc(self, text):
        return _timed(lambda: jp_time.format_rfc3339(jp_time.parse_rfc3339(text).astimezone(jp_time.timezone.utc)))

    @functions.signature({"types": ["string"]}, {"types": ["string"]})
    def _func_time_diff(self, start, end):
        return _timed(jp_time.time_diff, start, end)

    @functions.signature({"types": ["string"]}, {"types": ["string"]})
    def _func_time_before(self, a, b):
        return _timed(lambda: jp_time.parse_rfc3339(a) < jp_time.parse_rfc3339(b))

    @functions.signature({"types": ["string"]}, {"types": ["string"]})
    def _func_time_after(self, a, b):
        return _timed(lambda: jp_time.parse_rfc3339(a) > jp_time.parse_rfc3339(b))

    @functions.signature({"types": ["string"]}, {"types": ["string"]}, {"types": ["string"]})
    def _func_time_between(self, moment, start, end):
        return _timed(lambda: jp_time.parse_rfc3339(start) < jp_time.parse_rfc3339(moment)
                      < jp_time.parse_rfc3339(end))

    @functions.signature({"types": ["string"]})
    def _func_time_to_cron(self, text):
        return _timed(jp_time.time_to_cron, text)

    @functions.signature({"types": ["string"]})
    def _func_path_canonicalize(self, path):
        cleaned = posixpath.normpath(path) if path else "."
        return "/" + cleaned.lstrip("/") if cleaned.startswith("//") else cleaned

    @functions.signature({"types": ["string"]}, {"types": ["number"]})
    def _func_truncate(self, text, length):
        return text[:max(int(length), 0)]

    @functions.signature({"types": ["string"]}, {"types": ["string"]})
    def _func_semver_compare(self, version, constraint):
        return semver_matches(version, constraint)

    @functions.signature({"types": ["string"]})
    def _func_parse_json(self, text):
        try:
            return json.loads(text)
        except ValueError as exc:
            raise JMESPathError(f"parse_json: {exc}") from exc

    @functions.signature({"types": ["string"]})
    def _func_parse_yaml(self, text):
        try:
            return boundedyaml.safe_load(text)  # request text: no alias bombs, no endless lists
        except yaml.YAMLError as exc:
            raise JMESPathError(f"parse_yaml: {exc}") from exc

    @functions.signature({"types": ["object", "array"]}, {"types": ["string", "number"]})
    def _func_lookup(self, collection, key):
        if isinstance(collection, dict):
            if not isinstance(key, str):
                raise JMESPathError("lookup: key must be a string for objects")
            return collection.get(key)
        if not is_number(key) or key != int(key):
            raise JMESPathError("lookup: index must be an integer for arrays")
        index = int(key)
        return collection[index] if 0 <= index < len(collection) else None

    @functions.signature({"types": ["object", "array"]}, {"types": ["string"]}, {"types": ["string"]})
    def _func_items(self, collection, key_name, value_name):
        pairs = sorted(collection.items()) if isinstance(collection, dict) else enumerate(collection)
        return [{key_name: k, value_name: v} for k, v in pairs]

    @functions.signature({"types": ["array"]}, {"types": ["array"]})
    def _func_object_from_lists(self, keys, values):
        return {str(k): (values[i] if i < len(values) else None) for i, k in enumerate(keys)}

    @functions.signature({"types": ["string"]})
    def _func_random(self, pattern):
        return _random_string(pattern)

    @functions.signature({"types": ["string"]})
    def _func_x509_decode(self, pem):
        from .jp_x509 import decode
        return decode(pem)

    @functions.signature({"types": ["string"]})
    def _func_sha256(self, text):
        import hashlib
        return hashlib.sha256(text.encode()).hexdigest()


def _arith(fn, *args):
    try:
        return fn(*args)
    except jp_arith.ArithmeticError_ as exc:
        raise JMESPathError(str(exc)) from exc


def _timed(fn, *args):
    try:
        return fn(*args)
    except (ValueError, OverflowError) as exc:
        raise JMESPathError(f"time function: {exc}") from exc


def _random_string(pattern: str) -> str:
    match = re.fullmatch(r"\[([^\]]+)\]\{(\d+)\}", pattern)
    if not match:
        raise JMESPathError(f"random: unsupported pattern {pattern!r} (expected [class]{{n}})")
    _check_size(int(match.group(2)), "random")
    chars = []
    spec = match.group(1)
    for lo, hi in re.findall(r"(.)-(.)", spec):
        chars.extend(chr(c) for c in range(ord(lo), ord(hi) + 1))
    chars.extend(re.sub(r".-.", "", spec))
    return "".join(_random.choice(chars) for _ in range(int(match.group(2))))


class _Interpreter(TreeInterpreter):
    """go-jmespath (Kyverno's fork) stops a path at a missing field instead of feeding null onwards, so
    ``items[].resources.keys(@)`` skips items without ``resources`` rather than failing in ``keys``."""

    def visit(self, node, *args, **kwargs):
        jp_budget.spend(1, "JMESPath query")  # a step per node visited: projections over long lists add up
        return super().visit(node, *args, **kwargs)

    def visit_subexpression(self, node, value):
        result = value
        for child in node["children"]:
            result = self.visit(child, result)
            if result is None:
                return None
        return result


_OPTIONS = jmespath.Options(custom_functions=KyvernoFunctions())
_INTERPRETER = _Interpreter(_OPTIONS)


@lru_cache(maxsize=8192)
def compile_query(expression: str):
    try:
        parsed = jmespath.compile(expression)
        jp_budget.check_depth(parsed.parsed, expression)
        return parsed
    except jmespath.exceptions.JMESPathError as exc:
        raise JMESPathError(f"incorrect query {expression}: {exc}") from exc
    except jp_budget.BudgetSpent as exc:
        raise JMESPathError(str(exc)) from None
    except RecursionError:  # the parser's own recursion, on nesting far beyond MAX_DEPTH
        raise JMESPathError(f"the expression nests more than the limit of {jp_budget.MAX_DEPTH} levels") from None


def check_query(expression: str) -> None:
    """A query a policy writes out, checked at load: JMESPathError when it nests too deeply. Its other errors
    (syntax) stay the rule's at evaluation, where Kyverno reports them."""
    try:
        compile_query(expression.strip())
    except JMESPathError as exc:
        if "nests" in str(exc):
            raise


def query(expression: str, data: Any) -> Any:
    """Evaluate like Kyverno's context.Query: syntax errors, function errors and unknown keys raise."""
    parsed = compile_query(expression.strip())
    budget = jp_budget.begin()
    try:
        result = _INTERPRETER.visit(parsed.parsed, data)
        if result is None:
            _raise_if_missing(parsed.parsed, data)
        return result
    except JMESPathError:
        raise
    except jp_budget.BudgetSpent as exc:
        raise JMESPathError(str(exc)) from None
    except (jmespath.exceptions.JMESPathError, TypeError, ValueError, ArithmeticError, re.error) as exc:
        # ArithmeticError: round(`1e308`, `1`) overflows; re.error: a pattern RE2 finds too large
        raise JMESPathError(f"JMESPath query failed: {exc}") from exc
    finally:
        jp_budget.end(budget)


def _raise_if_missing(node: dict, data: Any) -> Any:
    kind = node["type"]
    if kind == "field":
        if isinstance(data, dict):
            if node["value"] not in data:
                raise NotFound(node["value"])
            return data[node["value"]]
        return None
    if kind in ("subexpression", "index_expression"):
        for child in node["children"]:
            data = _raise_if_missing(child, data)
        return data
    try:
        return _INTERPRETER.visit(node, data)
    except Exception:  # noqa: BLE001 - the full query already succeeded; this walk only looks for missing keys
        return None
