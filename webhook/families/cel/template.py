"""GeneratingPolicy `generate[].template`: YAML documents to create, with `(( expr ))` placeholders when
`interpolate: cel` (Kyverno's pkg/cel/policies/gpol/template).

A string that is exactly one placeholder takes the expression's value (a map, a list, a number...); a
placeholder inside text is rendered as a string. `\\((` writes a literal `((`. Without `interpolate: cel`
the documents are created as written.
"""

from __future__ import annotations

from typing import Any, Mapping

import yaml

from webhook.cel import CelCompiler
from webhook.families.cel.scope import CompileFailed, Expr, Scope, compile_expr
from webhook.model import boundedyaml
from webhook.model.quickinit import frozen_dataclass


def _placeholder_end(text: str, start: int) -> int:
    """Index just past the `))` closing the placeholder opened at `start`; quotes and parentheses nest."""
    depth, quote, i = 0, "", start + 2
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\":
                i += 2
                continue
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            if depth == 0 and text.startswith("))", i):
                return i + 2
            depth -= 1
        i += 1
    raise ValueError(f"unclosed (( in {text!r}")


@frozen_dataclass
class Segments:
    parts: tuple[str | Expr, ...]

    def render(self, scope: Scope) -> Any:
        if len(self.parts) == 1 and isinstance(self.parts[0], Expr):
            return scope.evaluate(self.parts[0])
        out = []
        for part in self.parts:
            if isinstance(part, Expr):
                value = scope.evaluate(part)
                out.append(value if isinstance(value, str) else yaml.safe_dump(value, default_flow_style=True).strip())
            else:
                out.append(part)
        return "".join(out)


def _scan(cel: CelCompiler, text: str, field: str) -> str | Segments:
    if "((" not in text:
        return text
    parts: list[str | Expr] = []
    literal, i = [], 0
    while i < len(text):
        if text.startswith("\\((", i):
            literal.append("((")
            i += 3
        elif text.startswith("((", i):
            try:
                end = _placeholder_end(text, i)
            except ValueError as exc:
                raise CompileFailed(field, str(exc)) from None
            if literal:
                parts.append("".join(literal))
                literal = []
            parts.append(compile_expr(cel, text[i + 2:end - 2].strip(), field, "kyverno"))
            i = end
        else:
            literal.append(text[i])
            i += 1
    if literal:
        parts.append("".join(literal))
    return Segments(tuple(parts))


def _compile_node(cel: CelCompiler, node: Any, field: str) -> Any:
    if isinstance(node, str):
        return _scan(cel, node, field)
    if isinstance(node, Mapping):
        return {k: _compile_node(cel, v, f"{field}.{k}") for k, v in node.items()}
    if isinstance(node, list):
        return [_compile_node(cel, v, f"{field}[{i}]") for i, v in enumerate(node)]
    return node


def _render(node: Any, scope: Scope) -> Any:
    if isinstance(node, Segments):
        return node.render(scope)
    if isinstance(node, dict):
        return {k: _render(v, scope) for k, v in node.items()}
    if isinstance(node, list):
        return [_render(v, scope) for v in node]
    return node


@frozen_dataclass
class GeneratedTemplate:
    field: str
    documents: tuple[Any, ...]

    @classmethod
    def compile(cls, cel: CelCompiler, raw: Any, field: str) -> "GeneratedTemplate":
        if not isinstance(raw, Mapping) or not isinstance(raw.get("value"), str):
            raise CompileFailed(f"{field}.value", "a template needs a value: YAML documents")
        interpolate = str(raw.get("interpolate") or "none").lower()
        if interpolate not in ("none", "cel"):
            raise CompileFailed(f"{field}.interpolate", "must be none or cel")
        try:
            docs = [d for d in boundedyaml.safe_load_all(raw["value"]) if d is not None]
        except yaml.YAMLError as exc:
            raise CompileFailed(f"{field}.value", f"invalid YAML: {exc}") from None
        if not docs or not all(isinstance(d, Mapping) for d in docs):
            raise CompileFailed(f"{field}.value", "every document must be a mapping describing a resource")
        if interpolate == "cel":
            docs = [_compile_node(cel, d, f"{field}.value") for d in docs]
        return cls(field, tuple(docs))

    def render(self, scope: Scope) -> list[Any]:
        return [_render(doc, scope) for doc in self.documents]
