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
from functools import lru_cache
from typing import Any

import jmespath
import yaml
from jmespath import functions
from jmespath.visitor import TreeInterpreter

from webhook.model import boundedyaml

from . import jp_arith, jp_budget, jp_time
from .jp_errors import JMESPathError, NotFound, check_size
from .jp_regex import go_expansion, go_regex, replaced_size, sub_limited
from .gotypes import is_number, sprint, wildcard_match
from .jp_semver import semver_matches


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
        check_size(len(glue) * max(len(items) - 1, 0) + sum(map(len, items)), "join")
        return glue.join(items)

    @functions.signature({"types": ["string"]}, {"types": ["string"]})
    def _func_compare(self, a, b):
        return (a > b) - (a < b)

    @functions.signature({"types": ["string"]}, {"types": ["string"]})
    def _func_equal_fold(self, a, b):
        return a.casefold() == b.casefold()

    @functions.signature({"types": ["string"]}, {"types": ["string"]}, {"types": ["string"]}, {"types": ["number"]})
    def _func_replace(self, text, old, new, count):
        check_size(replaced_size(text, old, new, int(count)), "replace")
        return text.replace(old, new, int(count)) if int(count) >= 0 else text.replace(old, new)

    @functions.signature({"types": ["string"]}, {"types": ["string"]}, {"types": ["string"]})
    def _func_replace_all(self, text, old, new):
        check_size(replaced_size(text, old, new, -1), "replace_all")
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
        regex = go_regex(pattern)
        return sub_limited(regex, _str(src), go_expansion(regex, _str(repl)), "regex_replace_all")

    @functions.signature({"types": ["string"]}, {"types": ["string", "number"]}, {"types": ["string", "number"]})
    def _func_regex_replace_all_literal(self, pattern, src, repl):
        literal = _str(repl)
        return sub_limited(go_regex(pattern), _str(src), lambda _m: literal, "regex_replace_all_literal")

    @functions.signature({"types": ["string"]}, {"types": ["string", "number"]})
    def _func_regex_match(self, pattern, src):
        return go_regex(pattern).search(_str(src)) is not None

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
    check_size(int(match.group(2)), "random")
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


# Parsed queries are kept for expressions of at most this many characters: what policies write. A longer one was
# built from request data (a nested variable), is parsed per call and never kept, here or in jmespath's own cache.
CACHED_QUERY_CHARS = 1024


def compile_query(expression: str):
    return _cached_query(expression) if len(expression) <= CACHED_QUERY_CHARS else _compile(expression, False)


@lru_cache(maxsize=8192)
def _cached_query(expression: str):
    return _compile(expression, True)


def _compile(expression: str, keep: bool):
    try:
        # Parser._do_parse is what Parser.parse runs on a miss of the library's cache, without storing the result
        parsed = jmespath.compile(expression) if keep else jmespath.parser.Parser()._do_parse(expression)
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
