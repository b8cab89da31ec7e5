"""Apply a mutation to an object: ApplyConfiguration (structured merge) and JSON Patch (RFC 6902).

Structured merge as server-side apply does it for the built-in schemas: maps merge key by key; lists of
named items merge by their key (containers by `name`, volumeMounts by `mountPath`, container ports by
`containerPort`+`protocol`, ...): an item of the configuration updates the item with the same key,
or is appended; `finalizers` merge as a set; every other list is atomic (replaced whole). A null in
the configuration removes the field.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

# list field name -> the keys that identify an item (Kubernetes' listMapKeys / patchMergeKey)
LIST_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",), "initContainers": ("name",), "ephemeralContainers": ("name",), "volumes": ("name",),
    "env": ("name",), "volumeMounts": ("mountPath",), "volumeDevices": ("devicePath",), "imagePullSecrets": ("name",),
    "hostAliases": ("ip",), "resourceClaims": ("name",), "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
    "conditions": ("type",), "ownerReferences": ("uid",), "readinessGates": ("conditionType",),
    "schedulingGates": ("name",),
}
SET_LISTS = frozenset({"finalizers"})
_DEFAULTS = {"protocol": "TCP"}


class PatchError(ValueError):
    pass


def _port_keys(items: list[Any]) -> tuple[str, ...] | None:
    sample = next((i for i in items if isinstance(i, Mapping)), None)
    if sample is None:
        return None
    if "containerPort" in sample:
        return ("containerPort", "protocol")
    if "port" in sample:
        return ("port", "protocol")
    return None


def _key(item: Any, keys: tuple[str, ...]) -> tuple[Any, ...] | None:
    if not isinstance(item, Mapping):
        return None
    return tuple(item.get(k, _DEFAULTS.get(k)) for k in keys)


def _merge_list(name: str, current: list[Any], patch: list[Any]) -> list[Any]:
    if name in SET_LISTS:
        return list(current) + [v for v in patch if v not in current]
    keys = LIST_KEYS.get(name) or (_port_keys(patch + current) if name == "ports" else None)
    if not keys or not all(isinstance(i, Mapping) for i in patch):
        return copy.deepcopy(patch)
    out = copy.deepcopy(current)
    for item in patch:
        wanted = _key(item, keys)
        for index, existing in enumerate(out):
            if _key(existing, keys) == wanted:
                out[index] = merge(existing, item)
                break
        else:
            out.append(_without_nulls(item))
    return out


def _without_nulls(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def merge(current: Any, patch: Any, name: str = "") -> Any:
    """The object after applying `patch` (an apply configuration) to `current`; neither is changed."""
    if isinstance(current, Mapping) and isinstance(patch, Mapping):
        out = copy.deepcopy(dict(current))
        for key, value in patch.items():
            if value is None:
                out.pop(key, None)
            elif key in out:
                out[key] = merge(out[key], value, key)
            else:
                out[key] = _without_nulls(value)
        return out
    if isinstance(current, list) and isinstance(patch, list):
        return _merge_list(name, current, patch)
    return _without_nulls(copy.deepcopy(patch))


# --- JSON Patch ------------------------------------------------------------------------------------
def atomic_lists(config: Any, path: str = "") -> list[str]:
    """The lists of an apply configuration that structured merge replaces whole (neither keyed nor a set), as
    `.spec.tolerations`: Kubernetes refuses a MutatingAdmissionPolicy that sets one ("may not mutate atomic arrays,
    maps or structs"), since the fields it leaves out of the list would silently go."""
    found: list[str] = []
    if isinstance(config, Mapping):
        for key, value in config.items():
            where = f"{path}.{key}"
            if isinstance(value, list):
                keyed = key in SET_LISTS or key in LIST_KEYS or (key == "ports" and _port_keys(value) is not None)
                if not keyed or not all(isinstance(i, Mapping) for i in value) and key not in SET_LISTS:
                    found.append(where)
                    continue
                for item in value:
                    found += atomic_lists(item, where)
            else:
                found += atomic_lists(value, where)
    return found


def _tokens(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"path {path!r} must start with '/'")
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def _index(container: list[Any], token: str, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise PatchError(f"{token!r} is not a list index")
    index = int(token)
    if index > len(container) or (index == len(container) and not allow_end):
        raise PatchError(f"index {index} is out of range")
    return index


def _parent(doc: Any, tokens: list[str], path: str) -> Any:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, False)]
        else:
            raise PatchError(f"path {path}: {token!r} does not exist")
    return node


def _get(doc: Any, path: str) -> Any:
    tokens = _tokens(path)
    if not tokens:
        return doc
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, False)]
    raise PatchError(f"path {path} does not exist")


def _remove(doc: Any, path: str) -> Any:
    tokens = _tokens(path)
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent = _parent(doc, tokens, path)
    if isinstance(parent, dict) and tokens[-1] in parent:
        return parent.pop(tokens[-1])
    if isinstance(parent, list):
        return parent.pop(_index(parent, tokens[-1], False))
    raise PatchError(f"path {path} does not exist")


def _add(doc: Any, path: str, value: Any, replace: bool = False) -> Any:
    tokens = _tokens(path)
    if not tokens:
        return copy.deepcopy(value)
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise PatchError(f"path {path} does not exist")
        parent[last] = copy.deepcopy(value)
    elif isinstance(parent, list):
        if replace:
            parent[_index(parent, last, False)] = copy.deepcopy(value)
        else:
            parent.insert(_index(parent, last, True), copy.deepcopy(value))
    else:
        raise PatchError(f"path {path}: parent is not an object or list")
    return doc


def apply_patch(obj: Mapping[str, Any], operations: Any) -> dict[str, Any]:
    """RFC 6902 on a copy of obj; any failing operation fails the whole patch."""
    if not isinstance(operations, list):
        raise PatchError("a JSON patch expression must return a list of JSONPatch values")
    doc: Any = copy.deepcopy(dict(obj))
    for number, op in enumerate(operations):
        if not isinstance(op, Mapping) or not isinstance(op.get("path"), str):
            raise PatchError(f"operation {number} needs an op and a path")
        kind, path = op.get("op"), op["path"]
        if kind == "add":
            doc = _add(doc, path, op.get("value"))
        elif kind == "replace":
            doc = _add(doc, path, op.get("value"), replace=True)
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "test":
            if _get(doc, path) != op.get("value"):
                raise PatchError(f"test at {path} failed")
        elif kind in ("move", "copy"):
            value = _get(doc, str(op.get("from", "")))
            if kind == "move":
                _remove(doc, str(op.get("from", "")))
            doc = _add(doc, path, value)
        else:
            raise PatchError(f"operation {number}: unknown op {kind!r}")
    if not isinstance(doc, dict):
        raise PatchError("the patched document is not an object")
    return doc
