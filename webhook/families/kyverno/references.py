"""``$(...)`` references in policy documents (Kyverno pkg/engine/variables: substituteReferences).

A reference points at another leaf of the *same policy document*, never at the resource: Kyverno resolves it
before any ``{{ }}`` variable, against the document handed to ``SubstituteAll``: a validate ``pattern`` (or the
``anyPattern`` list), the whole rule for ``mutate`` patches, the patch map of a ``foreach`` mutation. Because the
document is the policy itself, every reference is resolved once, when the policy is compiled.

Kyverno's rules, reproduced here:

- a reference is ``$(`` up to the last ``)`` before a space, at the start or after any character but ``\\``;
  ``\\$(...)`` is an escape and loses its backslash;
- the text inside is trimmed of ``$``, ``(`` and ``)``; a leading value operator (``>=``, ``<=``, ``>``, ``<``,
  ``!``, ranges) is kept aside and prefixed to the resolved value;
- a path starting with ``/`` is absolute (from the document root, taken as written); any other path is joined
  with the referencing leaf's own path (the leaf's key included, so ``..`` first steps to the enclosing map) and
  cleaned as Go's ``path.Join`` does; the leaf's own anchors stay in that path, while the leaves it is compared
  with have theirs removed;
- without an operator the referenced value must be a string; with one it may be a string or a number (numbers
  as Go's ``%f``); anything else, or no leaf at that path, is an error: the rule reports ``error`` each time it
  applies (``variable substitution failed``), exactly where Kyverno fails it.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from .anchors import parse_anchor
from .pattern_values import operator_of
from .variables import SubstitutionError

from webhook.model.quickinit import frozen_dataclass

REFERENCE = re.compile(r"^\$\(.[^ ]*\)|[^\\]\$\(.[^ ]*\)")
ESCAPED = re.compile(r"\\\$\(.[^ )]*\)")


class ReferenceError(SubstitutionError):
    """A ``$(...)`` reference that does not resolve; names the reference and the path it is used at."""


@frozen_dataclass
class BrokenReference:
    """Stands in for a document whose references did not resolve: using it is the error Kyverno reports."""

    message: str


def check(document: Any) -> Any:
    """Raise the stored error when ``document`` is a BrokenReference; otherwise return it unchanged."""
    if isinstance(document, BrokenReference):
        raise ReferenceError(document.message)
    return document


def has_references(value: Any) -> bool:
    """True when any string or map key holds a reference or an escaped one."""
    if isinstance(value, str):
        return "$(" in value
    if isinstance(value, Mapping):
        return any(has_references(k) or has_references(v) for k, v in value.items())
    if isinstance(value, list):
        return any(has_references(v) for v in value)
    return False


def resolve_document(document: Any, root: Any = None, prefix: str = "") -> Any:
    """``document`` with its references resolved, or a BrokenReference carrying Kyverno's error.

    ``root`` is the document Kyverno resolves against when it is larger than ``document`` (a rule around its
    patch); ``prefix`` is ``document``'s path inside ``root``."""
    if not has_references(document):
        return document
    index = _leaves(document if root is None else root)
    try:
        return _walk(document, prefix, index)
    except ReferenceError as exc:
        return BrokenReference(str(exc))


def _leaves(document: Any) -> dict[str, Any]:
    """Anchor-free path -> value of every leaf (Kyverno's getValueFromReference; later leaves win)."""
    found: dict[str, Any] = {}

    def visit(value: Any, path: str) -> None:
        if isinstance(value, Mapping):
            for key, item in value.items():
                visit(item, f"{path}/{_escape(key)}")
        elif isinstance(value, list):
            for index, item in enumerate(value):
                visit(item, f"{path}/{index}")
        else:
            found[_strip_anchors(path)] = value

    visit(document, "")
    return found


def _walk(value: Any, path: str, index: dict[str, Any]) -> Any:
    if isinstance(value, Mapping):
        result = {}
        for key, item in value.items():
            new_key = _substitute(key, path, index) if isinstance(key, str) else key
            if not isinstance(new_key, str):
                raise ReferenceError(f'expected string after substituting variables in key "{key}"')
            result[new_key] = _walk(item, f"{path}/{_escape(key)}", index)
        return result
    if isinstance(value, list):
        return [_walk(item, f"{path}/{i}", index) for i, item in enumerate(value)]
    if isinstance(value, str):
        return _substitute(value, path, index)
    return value


def _substitute(value: str, path: str, index: dict[str, Any]) -> str:
    if "$(" not in value:
        return value
    for found in REFERENCE.findall(value):
        initial = found.startswith("$(")
        reference = found if initial else found[1:]
        resolved = _resolve(reference, path, index)
        value = value.replace(found, ("" if initial else found[0]) + resolved, 1)
    return ESCAPED.sub(lambda m: m.group(0)[1:], value)


def _resolve(reference: str, path: str, index: dict[str, Any]) -> str:
    target = reference.strip("$()")
    operator = operator_of(target)
    target = target[len(operator):]
    if not target:
        raise ReferenceError(f"failed to resolve {reference} at path {path}: expected path, found empty reference")
    target = target if target.startswith("/") else go_path_join(path, target)
    value = index.get(target)
    if value is None:
        raise ReferenceError(f"got nil resolved variable {reference} at path {path}: no leaf at {target}")
    if not operator:
        if isinstance(value, str):
            return value
        raise ReferenceError(f"NotResolvedReferenceErr,reference {reference} not resolved at path {path}")
    if isinstance(value, str):
        return operator + value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{operator}{float(value):f}"  # Go decodes JSON numbers as float64 and prints them with %f
    raise ReferenceError(f"failed to resolve {reference} at path {path}: incorrect expression: operator "
                         f"{operator} does not match with value {value}")


def _strip_anchors(path: str) -> str:
    """Kyverno's RemoveAnchorsFromPath: every segment's anchor removed, then cleaned like path.Join."""
    parts = path.split("/")
    if parts and parts[0] == "":
        parts = parts[1:]
    bare = [(parse_anchor(p).key if parse_anchor(p) else p) for p in parts]
    joined = go_path_join(*bare)
    return "/" + joined if path.startswith("/") else joined


def go_path_join(*elements: str) -> str:
    """Go's path.Join: the non-empty elements joined by '/', then cleaned ('.', '..', doubled slashes)."""
    text = "/".join(e for e in elements if e)
    if not text:
        return ""
    rooted = text.startswith("/")
    out: list[str] = []
    for part in text.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if out and out[-1] != "..":
                out.pop()
            elif not rooted:
                out.append("..")
            continue
        out.append(part)
    cleaned = "/".join(out)
    return ("/" + cleaned) if rooted else (cleaned or ".")


# Where Kyverno resolves references, per rule kind; everywhere else in a rule a reference is refused at load.
_PATTERN_KEYS = ("pattern", "anyPattern")
_PATCH_KEYS = ("patchStrategicMerge", "patchesJson6902")
_NOT_SUBSTITUTED = ("name", "match", "exclude", "celPreconditions")   # never substituted by Kyverno's engine


def resolve_rule(rule: Mapping[str, Any]) -> Mapping[str, Any]:
    """The rule with the references of its patterns and patches resolved (BrokenReference where they fail)."""
    if not has_references(rule):
        return rule
    rule = dict(rule)
    if isinstance(rule.get("validate"), Mapping):
        rule["validate"] = _resolve_validation(rule["validate"])
    if isinstance(rule.get("mutate"), Mapping):
        mutate = dict(rule["mutate"])
        for key in _PATCH_KEYS:
            if key in mutate:    # a plain mutate rule resolves against the whole rule (SubstituteAllInRule)
                mutate[key] = resolve_document(mutate[key], rule, f"/mutate/{key}")
        if isinstance(mutate.get("foreach"), list):
            mutate["foreach"] = [_resolve_mutate_foreach(e) for e in mutate["foreach"]]
        rule["mutate"] = mutate
    return rule


def _resolve_validation(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = dict(spec)
    for key in _PATTERN_KEYS:
        if spec.get(key) is not None:
            spec[key] = resolve_document(spec[key])
    if isinstance(spec.get("foreach"), list):
        spec["foreach"] = [_resolve_validation(e) if isinstance(e, Mapping) else e for e in spec["foreach"]]
    return spec


def _resolve_mutate_foreach(entry: Any) -> Any:
    if not isinstance(entry, Mapping):
        return entry
    entry = dict(entry)
    root = {key: entry.get(key) for key in _PATCH_KEYS}   # Kyverno's substituteAllInForEach document
    for key in _PATCH_KEYS:
        if key in entry:
            entry[key] = resolve_document(entry[key], root, f"/{key}")
    if isinstance(entry.get("foreach"), list):
        entry["foreach"] = [_resolve_mutate_foreach(e) for e in entry["foreach"]]
    return entry


def unsupported_references(rule: Mapping[str, Any]) -> list[str]:
    """Paths of references outside patterns and patches (messages, conditions, context, generate...)."""
    found: list[str] = []

    def visit(value: Any, path: str, skip: bool) -> None:
        if isinstance(value, Mapping):
            for key, item in value.items():
                if isinstance(key, str) and "$(" in key and not skip:
                    found.append(f"{path}.{key}")
                here = f"{path}.{key}" if path else str(key)
                visit(item, here, skip or _resolved_here(here))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                visit(item, f"{path}[{i}]", skip)
        elif isinstance(value, str) and "$(" in value and not skip:
            found.append(path)

    for key, value in rule.items():
        if key not in _NOT_SUBSTITUTED:
            visit(value, key, _resolved_here(key))
    return found


def _resolved_here(path: str) -> bool:
    last = re.sub(r"\[\d+\]$", "", path).rsplit(".", 1)[-1]
    if path.startswith("validate") and last in _PATTERN_KEYS:
        return re.fullmatch(r"validate(\.foreach\[\d+\])*\.(pattern|anyPattern)", path) is not None
    if path.startswith("mutate") and last in _PATCH_KEYS:
        return re.fullmatch(r"mutate(\.foreach\[\d+\])*\.(patchStrategicMerge|patchesJson6902)", path) is not None
    return path in ("validate.cel", "validate.podSecurity")   # CEL and PSS documents are never substituted


def _escape(key: Any) -> str:
    """A map key as a path segment: Kyverno's traversal writes '/' inside a key as '\\/'."""
    return str(key).replace("/", "\\/")


def broken(document: Any) -> str | None:
    """The error of the first BrokenReference inside a resolved rule, if any."""
    if isinstance(document, BrokenReference):
        return document.message
    children = document.values() if isinstance(document, Mapping) else document if isinstance(document, list) else ()
    return next((m for m in (broken(c) for c in children) if m), None)
