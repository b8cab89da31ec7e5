"""``{{ }}`` substitution in policy documents (Kyverno pkg/engine/variables).

Every string leaf and map key is scanned; ``{{expr}}`` is a JMESPath query on the rule's context document.
A string that is exactly one variable takes the variable's value (any JSON type); inside a longer string the
value is rendered (JSON for non-strings). Substitution repeats until no variable is left, so nested
``{{ a.{{ b }} }}`` resolve inside out; ``\\{{`` escapes a variable and ``{{- expr }}`` substitutes once
without re-scanning its result.

A resolved value may itself hold ``{{ }}`` (an annotation of the request, say) and is scanned again, as in
Kyverno; that is bounded here: a string gets one pass more than it has ``{{`` of its own (enough for any
nesting the policy wrote) and may not grow beyond MAX_TEXT. An annotation that names itself looped forever,
one that names itself twice doubled the string each pass.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterator, Mapping

from .gotypes import to_json_text
from .images import UnparsableImages
from .jmespath_functions import query
from .jp_errors import MAX_TEXT, JMESPathError

from webhook.model.quickinit import frozen_dataclass

VARIABLE = re.compile(r"(^|[^\\])(\{\{(?:\{[^{}]*\}|[^{}])*\}\})")
_IMAGES = re.compile(r"(?<![\w.])images\b")
VARIABLE_AT_START = re.compile(r"^\{\{(\{[^{}]*\}|[^{}])*\}\}")


class SubstitutionError(ValueError):
    """A variable could not be resolved; the message names the variable and where it was used."""


@frozen_dataclass
class JsonContext:
    """The JSON document variables are resolved against, plus what substitution needs to know about it."""

    data: dict
    delete: bool = False          # DELETE requests read request.object from request.oldObject
    at_prefix: str = "request.object"

    def resolve(self, expression: str) -> Any:
        if self.delete:
            expression = expression.replace("request.object", "request.oldObject")
        images = self.data.get("images")
        if isinstance(images, UnparsableImages) and _IMAGES.search(expression):
            raise SubstitutionError(f"failed to resolve {expression}: {images.message}")
        return query(expression, self.data)

    def with_values(self, **values: Any) -> "Context":
        return JsonContext({**self.data, **values}, self.delete, self.at_prefix)


Resolver = Callable[[JsonContext, str], Any]


def default_resolver(ctx: JsonContext, expression: str) -> Any:
    return ctx.resolve(expression)


def has_variables(value: Any) -> bool:
    if isinstance(value, str):
        return VARIABLE.search(value) is not None
    if isinstance(value, dict):
        return any(has_variables(k) or has_variables(v) for k, v in value.items())
    if isinstance(value, list):
        return any(has_variables(v) for v in value)
    return False


def substitute_all(document: Any, ctx: JsonContext, resolver: Resolver = default_resolver,
                   path: tuple[str, ...] = ()) -> Any:
    """Return ``document`` with every variable replaced (a copy where anything changed); raises
    SubstitutionError. A caller holding a large document that it knows has no variable (has_variables, asked
    once when the policy is compiled) skips the call: this walk copies every map and list."""
    if isinstance(document, dict):
        return {_substitute_key(k, ctx, resolver, path): substitute_all(v, ctx, resolver, path + (str(k),))
                for k, v in document.items()}
    if isinstance(document, list):
        return [substitute_all(v, ctx, resolver, path + (str(i),)) for i, v in enumerate(document)]
    if isinstance(document, str):
        return substitute_string(document, ctx, resolver, path)
    return document


def _substitute_key(key: Any, ctx: JsonContext, resolver: Resolver, path: tuple[str, ...]) -> Any:
    if not isinstance(key, str) or "{{" not in key:
        return key
    value = substitute_string(key, ctx, resolver, path)
    return value if isinstance(value, str) else to_json_text(value)


def substitute_string(value: str, ctx: JsonContext, resolver: Resolver = default_resolver,
                      path: tuple[str, ...] = ()) -> Any:
    if "{{" not in value:
        return value
    found = [m.group(0) for m in VARIABLE.finditer(value)]
    allowed = passes = value.count("{{") + 1
    while found:
        passes -= 1
        if passes < 0:
            raise SubstitutionError(f"variables at {_where(path)} still unresolved after {allowed} passes: "
                                    "a substituted value holds variables again")
        original = value
        shallow = False
        for occurrence in found:
            initial = VARIABLE_AT_START.match(occurrence) is not None
            token = occurrence if initial else occurrence[1:]
            expression, shallow = _expression(token)
            if expression == "@":
                expression = _at_path(ctx, path)
            resolved = _resolve(resolver, ctx, expression, path)
            if original == token:
                return resolved
            prefix = "" if initial else occurrence[0]
            if shallow and isinstance(resolved, str):
                resolved = resolved.replace("{{", "\\{{")
            text = resolved if isinstance(resolved, str) else to_json_text(resolved)
            value = value.replace(prefix + token, prefix + text, 1)
            if len(value) > MAX_TEXT:
                raise SubstitutionError(f"substituting variables at {_where(path)} makes a string of more "
                                        f"than {MAX_TEXT} characters")
        found = [] if shallow else [m.group(0) for m in VARIABLE.finditer(value)]
    return value.replace("\\{{", "{{")


def _expression(token: str) -> tuple[str, bool]:
    expression = token.replace("{{", "").replace("}}", "").strip()
    if expression.startswith("-"):
        return expression[1:].strip(), True
    return expression, False


def _resolve(resolver: Resolver, ctx: JsonContext, expression: str, path: tuple[str, ...]) -> Any:
    try:
        return resolver(ctx, expression)
    except JMESPathError as exc:
        raise SubstitutionError(f"failed to resolve {expression} at path {_where(path)}: {exc}") from exc


def _where(path: tuple[str, ...]) -> str:
    return "/" + "/".join(path) if path else "/"


def _at_path(ctx: JsonContext, path: tuple[str, ...]) -> str:
    """``{{@}}`` is the resource value at the same place as the pattern key being substituted."""
    parts = ctx.at_prefix.split(".")
    for part in path:
        bare = re.sub(r"^[+<=X^]?\((.*)\)$", r"\1", part)
        parts.append(f"[{bare}]" if bare.isdigit() else f'"{bare}"')
    return ".".join(parts).replace(".[", "[")


def written_queries(document: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
    """(where, expression) of every query a policy writes out: each `{{ }}` without another inside it (those are
    only known once substituted) and each `jmesPath` field, for checks at load."""
    if isinstance(document, Mapping):
        for key, value in document.items():
            if key == "jmesPath" and isinstance(value, str) and "{{" not in value:
                yield _where(path + (key,)), value
            else:
                yield from written_queries(value, path + (str(key),))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield from written_queries(value, path + (str(index),))
    elif isinstance(document, str) and "{{" in document:
        for match in VARIABLE.finditer(document):
            if "{{" in match.group(2)[2:]:
                continue
            expression, _ = _expression(match.group(2))
            if expression and expression != "@":
                yield _where(path), expression


def lenient_resolver(ctx: JsonContext, expression: str) -> Any:
    """Resolver that turns unknown keys into null (used where Kyverno tolerates missing data, e.g. messages)."""
    try:
        return ctx.resolve(expression)
    except JMESPathError:
        return None
