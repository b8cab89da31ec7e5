"""``patchStrategicMerge`` with Kyverno's anchors (pkg/engine/mutate/patch/strategicPreprocessing.go).

First the pattern is pre-processed against the resource: ``+(key)`` is dropped where the resource has the key and
becomes a plain key elsewhere; ``(key)`` conditions and ``<(key)`` global conditions are checked with the
validation pattern matcher; list elements carrying anchors are expanded once per matching resource element
(named after it). Then every anchored element is removed and the rest is merged the way Kubernetes' strategic
merge patch does: maps recursively, lists of maps by their merge key, other lists replaced, ``null`` deletes.
"""

from __future__ import annotations

import copy
from typing import Any

from .anchors import ADD_IF_ABSENT, CONDITION, GLOBAL, is_kind, parse_anchor
from .pattern import match_pattern
from .pattern_values import literal_pattern

# Merge keys of the Kubernetes types Kyverno policies patch (from the API's patchMergeKey markers).
MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name", "volumes": "name",
    "env": "name", "imagePullSecrets": "name", "volumeMounts": "mountPath", "volumeDevices": "devicePath",
    "ports": "containerPort", "hostAliases": "ip", "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name", "conditions": "type", "ownerReferences": "uid",
}
# Lists Kubernetes replaces wholesale even though their items look keyed.
REPLACE_LISTS = {"tolerations", "args", "command", "finalizers"}
# kyaml infers an associative key for lists it has no schema for, in this order.
ASSOCIATIVE_KEYS = ("mountPath", "devicePath", "ip", "type", "topologyKey", "name", "containerPort")


class _Condition(Exception):
    pass


class _GlobalCondition(Exception):
    pass


def apply_strategic_merge(resource: dict, pattern: dict) -> dict:
    """Return the patched copy of ``resource`` (unchanged when a top-level condition does not hold). The copy
    shares what the patch leaves alone with ``resource`` (merge copies on write): neither is edited after."""
    patch = copy.deepcopy(pattern)
    try:
        _walk(patch, resource)
        _delete_condition_elements(patch)
    except (_Condition, _GlobalCondition):
        patch = {}
    return merge(resource, patch, "")


def _walk(pattern: Any, resource: Any) -> None:
    if isinstance(pattern, dict):
        _walk_map(pattern, resource)
    elif isinstance(pattern, list) and pattern and isinstance(pattern[0], dict):
        _walk_list_of_maps(pattern, resource)


def _walk_map(pattern: dict, resource: Any) -> None:
    _add_if_absent(pattern, resource)
    _check_conditions(pattern, resource, GLOBAL, _GlobalCondition)
    _check_conditions(pattern, resource, CONDITION, _Condition)
    for key in list(pattern):
        if is_kind(key, CONDITION, GLOBAL, ADD_IF_ABSENT):
            continue
        value = resource.get(key) if isinstance(resource, dict) else None
        _walk(pattern[key], value)


def _add_if_absent(pattern: Any, resource: Any) -> int:
    if not isinstance(pattern, dict):
        return 0
    anchored = [k for k in pattern if is_kind(k, ADD_IF_ABSENT)]
    for key in anchored:
        bare = parse_anchor(key).key
        if isinstance(resource, dict) and bare in resource:
            del pattern[key]
        else:
            _rename(pattern, key, bare)
    return len(anchored)


def _rename(mapping: dict, old: str, new: str) -> None:
    items = list(mapping.items())
    mapping.clear()
    for key, value in items:
        mapping[new if key == old else key] = value


def _check_conditions(pattern: dict, resource: Any, modifier: str, error: type[Exception]) -> None:
    for key in [k for k in pattern if is_kind(k, modifier)]:
        bare = parse_anchor(key).key
        if not isinstance(resource, dict) or bare not in resource:
            raise error(f'could not found "{bare}" key in the resource')
        if _add_if_absent(pattern[key], resource[bare]) > 0:
            continue
        if match_pattern(resource[bare], pattern[key]).status != "pass":
            raise error(f"condition failed at {bare}")


def _has_anchors(node: Any, modifiers: tuple[str, ...]) -> bool:
    if isinstance(node, dict):
        return any(is_kind(k, *modifiers) or _has_anchors(v, modifiers) for k, v in node.items())
    if isinstance(node, list):
        return any(_has_anchors(v, modifiers) for v in node)
    if isinstance(node, str):
        return is_kind(node, CONDITION, GLOBAL)
    return False


def _walk_list_of_maps(pattern: list, resource: Any) -> None:
    elements = resource if isinstance(resource, list) else []
    for element in list(pattern):
        if not _has_anchors(element, (CONDITION, GLOBAL, ADD_IF_ABSENT)):
            continue
        has_global = _has_anchors(element, (GLOBAL,))
        global_passed, global_error = False, None
        working = copy.deepcopy(element)
        literal = _literal_conditions(working)
        for item in elements:
            if literal is not None and _fails_literally(item, literal):
                continue  # the _Condition _walk would raise, told without walking (foreach: n elements x n items)
            try:
                _walk(working, item)
            except _Condition:
                continue
            except _GlobalCondition as exc:
                global_error = exc
                continue
            if has_global:
                global_passed = True
            else:
                _append_named(pattern, working, item)
        if resource is None:
            try:
                _walk(working, None)
                global_passed = global_passed or has_global
            except _Condition:
                continue
        if not global_passed and global_error is not None:
            raise global_error


def _literal_conditions(element: dict) -> tuple[tuple[str, str], ...] | None:
    """The element's `(key): text` conditions when each is text that stands for itself (pattern_values.
    literal_pattern) and it has no other anchor at its top (`<(key)` decides first, `+(key)` edits the
    element per item): then an item fails the conditions when it is no map, lacks a key, or holds other text
    there. None when any of that does not hold: the walk decides every item."""
    conditions = []
    for key, value in element.items():
        anchor = parse_anchor(key)
        if anchor is None:
            continue
        if anchor.modifier != CONDITION or type(value) is not str or not literal_pattern(value):
            return None
        conditions.append((anchor.key, value))
    return tuple(conditions) or None


def _fails_literally(item: Any, conditions: tuple[tuple[str, str], ...]) -> bool:
    if type(item) is not dict:
        return True
    for key, text in conditions:
        value = item.get(key, _MISSING)
        if value is _MISSING or (type(value) is str and value != text):
            return True
    return False  # (a value of another type: the walk decides)


_MISSING = object()


def _append_named(pattern: list, element: dict, resource_item: Any) -> None:
    name = resource_item.get("name") if isinstance(resource_item, dict) else None
    if not name:
        return
    node = copy.deepcopy(element)
    if _delete_anchors(node, True):
        return
    node["name"] = name
    pattern.append(node)


def _delete_condition_elements(pattern: dict) -> None:
    for key in list(pattern):
        if _delete_anchors(pattern[key], is_kind(key, CONDITION, GLOBAL)):
            del pattern[key]


def _delete_anchors(node: Any, delete_scalar: bool) -> bool:
    if isinstance(node, dict):
        return _delete_in_map(node)
    if isinstance(node, list):
        return _delete_in_list(node)
    return delete_scalar


def _delete_in_map(node: dict) -> bool:
    kept_anchor = False
    for key in [k for k in node if is_kind(k, CONDITION, GLOBAL)]:
        if _delete_anchors(node[key], True):
            del node[key]
        else:
            kept_anchor = True
    if kept_anchor:
        for key in [k for k in node if is_kind(k, CONDITION, GLOBAL)]:
            _rename(node, key, parse_anchor(key).key)
    empty = True
    for key in list(node):
        if _delete_anchors(node[key], False):
            del node[key]
        else:
            empty = False
    return empty


def _delete_in_list(node: list) -> bool:
    was_empty = not node
    node[:] = [e for e in node
               if not _has_anchors(e, (CONDITION, GLOBAL, ADD_IF_ABSENT)) and not _delete_anchors(e, False)]
    return not node and not was_empty


def merge(target: Any, patch: Any, field: str) -> Any:
    """Strategic merge of ``patch`` into ``target`` (``field`` names the list being merged, for merge keys).
    Copy on write: ``target`` is never edited; the maps and lists on the patch's paths are new, the rest is
    ``target``'s own (a foreach step on one container of thousands copied the whole pod, per element)."""
    if isinstance(patch, dict):
        if patch.get("$patch") == "delete":
            return None
        if patch.get("$patch") == "replace":
            return {k: v for k, v in patch.items() if k != "$patch"}
        target = dict(target) if isinstance(target, dict) else {}
        for key, value in patch.items():
            if value is None:
                target.pop(key, None)
            else:
                merged = merge(target.get(key), value, key)
                target[key] = merged
        return target
    if isinstance(patch, list):
        return _merge_list(target, patch, field)
    return patch


def _merge_list(target: Any, patch: list, field: str) -> list:
    if not isinstance(target, list) or field in REPLACE_LISTS:
        return [_strip_directives(p) for p in patch]
    key = _list_key(target, patch, field)
    if key is None:
        return [_strip_directives(p) for p in patch]
    # kustomize merges with ListIncreaseDirection=Prepend: elements only the patch has come first, then the
    # existing elements in their order, each merged with the patch element of the same key.
    patched = {item.get(key): item for item in patch}
    existing_keys = {t.get(key) for t in target if isinstance(t, dict)}
    result: list = [_strip_directives(item) for item in patch
                    if item.get(key) not in existing_keys and item.get("$patch") != "delete"]
    for item in target:
        update = patched.get(item.get(key)) if isinstance(item, dict) else None
        if update is None:
            result.append(item)
        elif update.get("$patch") != "delete":
            result.append(merge(item, update, field))
    return result


def _list_key(target: list, patch: list, field: str) -> str | None:
    items = [i for i in target + patch]
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    known = MERGE_KEYS.get(field)
    if known and all(known in i for i in patch):
        return known
    return next((k for k in ASSOCIATIVE_KEYS if all(k in i for i in items)), None)


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_directives(v) for k, v in value.items() if k != "$patch" and v is not None}
    if isinstance(value, list):
        return [_strip_directives(v) for v in value]
    return value
