"""``patchesJson6902`` as Kyverno applies it: negative indices, removing a missing path is a no-op, ``add``
creates missing parent objects (evanphx/json-patch with those options)."""

from __future__ import annotations

import copy
from typing import Any

from webhook.model import boundedyaml
from webhook.model.jsoncopy import clone


class Json6902Error(ValueError):
    pass


def parse_patches(text: Any) -> list[dict]:
    # the text holds substituted request values: read it with the alias and nesting bounds
    operations = boundedyaml.safe_load(text) if isinstance(text, str) else text
    if not isinstance(operations, list) or not all(isinstance(op, dict) and "op" in op for op in operations):
        raise Json6902Error("patchesJson6902 must be a list of operations with 'op' and 'path'")
    return operations


def _tokens(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise Json6902Error(f"invalid JSON pointer {path!r}")
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def _index(container: list, token: str, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    try:
        index = int(token)
    except ValueError as exc:
        raise Json6902Error(f"invalid array index {token!r}") from exc
    if index < 0:
        index += len(container)
    limit = len(container) + (1 if allow_end else 0)
    if not 0 <= index < limit:
        raise Json6902Error(f"array index {token} out of range")
    return index


def _parent(doc: Any, tokens: list[str], create: bool) -> Any:
    node = doc
    for position, token in enumerate(tokens[:-1]):
        if isinstance(node, dict):
            if token not in node or node[token] is None:
                if not create:
                    raise Json6902Error(f"path /{'/'.join(tokens)} does not exist")
                node[token] = _container_for(tokens[position + 1])
            node = node[token]
        elif isinstance(node, list):
            if create and (token == "-" or not node):
                node.append(_container_for(tokens[position + 1]))  # EnsurePathExistsOnAdd grows the array
                node = node[-1]
                continue
            node = node[_index(node, token, False)]
        else:
            raise Json6902Error(f"path /{'/'.join(tokens)} does not exist")
    return node


def _container_for(following: str) -> Any:
    return [] if following == "-" or following.lstrip("-").isdigit() else {}


def _get(doc: Any, path: str) -> Any:
    node = doc
    for token in _tokens(path):
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, False)]
        else:
            raise Json6902Error(f"path {path} does not exist")
    return node


def _add(doc: Any, path: str, value: Any) -> Any:
    tokens = _tokens(path)
    if not tokens:
        return value
    parent = _parent(doc, tokens, True)
    if isinstance(parent, list):
        if not parent and tokens[-1].startswith("-"):
            parent.append(value)
        else:
            parent.insert(_index(parent, tokens[-1], True), value)
    elif isinstance(parent, dict):
        parent[tokens[-1]] = value
    else:
        raise Json6902Error(f"cannot add at {path}")
    return doc


def _remove(doc: Any, path: str, missing_ok: bool) -> Any:
    tokens = _tokens(path)
    try:
        parent = _parent(doc, tokens, False)
        if isinstance(parent, list):
            parent.pop(_index(parent, tokens[-1], False))
        elif isinstance(parent, dict) and tokens[-1] in parent:
            del parent[tokens[-1]]
        elif not missing_ok:
            raise Json6902Error(f"path {path} does not exist")
    except Json6902Error:
        if not missing_ok:
            raise
    return doc


def apply_patches(document: Any, operations: list[dict]) -> Any:
    doc = clone(document)
    for op in operations:
        kind, path = op.get("op"), op.get("path", "")
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            doc = _remove(doc, path, True)
        elif kind == "replace":
            _get(doc, path)
            doc = _add(_remove(doc, path, False), path, copy.deepcopy(op.get("value")))
        elif kind in ("move", "copy"):
            value = copy.deepcopy(_get(doc, op.get("from", "")))
            if kind == "move":
                doc = _remove(doc, op["from"], False)
            doc = _add(doc, path, value)
        elif kind == "test":
            if _get(doc, path) != op.get("value"):
                raise Json6902Error(f"test operation failed at {path}")
        else:
            raise Json6902Error(f"unknown patch operation {kind!r}")
    return doc
