"""Placeholder templates of the NotebookInjection policy: "{user}", "{user_initial}", "{namespace}".

Templates are checked when the policy is compiled, so a typo such as "{usr}" is refused at load time
with the field that holds it, instead of producing a broken pod at admission time.
"""

from __future__ import annotations

import re
import string
from dataclasses import field
from types import MappingProxyType
from typing import Any, Mapping

from webhook.model.errors import PolicyCompileError
from webhook.model.jsoncopy import copier
from webhook.model.quickinit import frozen_dataclass

# What every template may use: the profile's owner and namespace.
OWNER_PLACEHOLDERS = frozenset({"user", "user_initial", "namespace"})
# What the refresher's command line and the notebook's environment may use on top: values the policy
# derives itself, so a path is written once in the YAML and cannot drift between two fields.
DERIVED_PLACEHOLDERS = frozenset({"token_path", "token_dir", "credentials_dir", "refresh_margin_seconds", "home"})

_FORMATTER = string.Formatter()


@frozen_dataclass
class NotebookTemplate:
    text: str
    field: str  # where it came from in the policy, e.g. "spec.home.mountPath"
    names: frozenset[str]

    def render(self, values: Mapping[str, str]) -> str:
        # every name was checked at compile time, so format_map cannot reach anything else
        return self.text.format_map(values)


def compile_template(text: str, field: str, allowed: frozenset[str]) -> NotebookTemplate:
    try:
        parts = list(_FORMATTER.parse(text))
    except ValueError as exc:
        raise PolicyCompileError(field, f"{exc} in {text!r}; write a literal brace as {{{{ or }}}}") from None
    names = set()
    for _, name, spec, conversion in parts:
        if name is None:
            continue
        if name not in allowed:
            raise PolicyCompileError(field, f"unknown placeholder {{{name}}} in {text!r}; "
                                            f"allowed here: {', '.join('{' + n + '}' for n in sorted(allowed))}")
        if spec or conversion:
            raise PolicyCompileError(field, f"placeholder {{{name}}} takes no format or conversion in {text!r}")
        names.add(name)
    return NotebookTemplate(text, field, frozenset(names))


def name_pattern(template: NotebookTemplate) -> re.Pattern[str]:
    """Every text the template can render to ("oidc-{user}" -> oidc-.+, for fullmatch). A template of
    placeholders only would match everything: refused, as what it names could not be told apart."""
    parts = list(_FORMATTER.parse(template.text))
    if not any(literal for literal, _, _, _ in parts):
        raise PolicyCompileError(template.field, f"{template.text!r} needs a fixed part (e.g. oidc-{{user}}): "
                                                 f"what it renders to must be told apart from other names")
    return re.compile("".join(re.escape(literal) + (".+" if name is not None else "")
                              for literal, name, _, _ in parts))


_DYNAMIC = object()


@frozen_dataclass
class TemplateTree:
    """A YAML subtree (a volume source, a resources block) whose strings are templates.

    Stored read-only (mapping proxies and tuples), rendered into fresh dicts and lists per request. A
    tree without placeholders (a resources block, a securityContext) is rendered once, here, and each
    request gets a fresh copy of that: the same value, without walking the templates.
    """

    node: Any
    rendered: Any = field(init=False, repr=False, compare=False)  # the tree rendered once, or _DYNAMIC
    _copy: Any = field(init=False, repr=False, compare=False)  # jsoncopy.copier(rendered) when static

    def __post_init__(self) -> None:
        object.__setattr__(self, "rendered", _render(self.node, {}) if _static(self.node) else _DYNAMIC)
        object.__setattr__(self, "_copy", copier(self.rendered) if self.rendered is not _DYNAMIC else None)

    @property
    def static(self) -> bool:
        """No placeholder anywhere in the tree."""
        return self.rendered is not _DYNAMIC

    def render(self, values: Mapping[str, str]) -> Any:
        if self._copy is not None:
            return self._copy()
        return _render(self.node, values)


def compile_tree(value: Any, field: str, allowed: frozenset[str]) -> TemplateTree:
    return TemplateTree(_compile(value, field, allowed))


def _compile(value: Any, field: str, allowed: frozenset[str]) -> Any:
    if isinstance(value, str):
        return compile_template(value, field, allowed)
    if isinstance(value, Mapping):
        return MappingProxyType({k: _compile(v, f"{field}.{k}", allowed) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_compile(v, f"{field}[{i}]", allowed) for i, v in enumerate(value))
    return value


def _static(node: Any) -> bool:
    """No placeholder anywhere: rendering does not depend on the values."""
    kind = type(node)
    if kind is NotebookTemplate:
        return not node.names
    if kind is MappingProxyType:
        return all(_static(v) for v in node.values())
    if kind is tuple:
        return all(_static(v) for v in node)
    return True


def _render(node: Any, values: Mapping[str, str]) -> Any:
    # exact types: _compile builds only these (isinstance against the Mapping ABC costs more than the rest)
    kind = type(node)
    if kind is NotebookTemplate:
        return node.text.format_map(values)
    if kind is MappingProxyType:
        return {k: _render(v, values) for k, v in node.items()}
    if kind is tuple:
        return [_render(v, values) for v in node]
    return node
