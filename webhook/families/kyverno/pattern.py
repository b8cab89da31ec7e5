"""Validation of a resource against a Kyverno ``pattern`` (pkg/engine/validate + pkg/engine/anchor).

The walk mirrors Kyverno's: anchors of a map are evaluated first (sorted), then the plain keys (global anchors
and keys with nested anchors first). Conditional and global anchors that do not hold make the pattern *skip*;
a negation anchor that holds makes it *fail*; a condition anchor key absent from the resource while a sibling
fails turns the outcome into an *error*, exactly as Kyverno reports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .anchors import (CONDITION, EQUALITY, EXISTENCE, GLOBAL, NEGATION, has_nested_anchors, is_kind,
                      parse_anchor)
from .gotypes import contains_wildcard, wildcard_match
from .pattern_values import validate_value

from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Outcome

_NEGATION_MSG = "negation anchor matched in resource"
_CONDITION_MSG = "conditional anchor mismatch"
_GLOBAL_MSG = "global anchor mismatch"


@dataclass
class _Err:
    text: str
    anchor: str | None = None       # NEGATION / CONDITION / GLOBAL for anchor errors, None otherwise
    pattern_error: bool = False     # Kyverno's *PatternError wrapper (skip aggregation)


def _anchor_err(code: str, prefix: str, msg: str) -> _Err:
    return _Err(f"{prefix}: {msg}", anchor=code)


def _is(err: _Err, code: str, msg: str) -> bool:
    if err.anchor is not None:
        return err.anchor == code
    return msg in err.text


def _skip(err: _Err) -> bool:
    return _is(err, CONDITION, _CONDITION_MSG) or _is(err, GLOBAL, _GLOBAL_MSG)


@frozen_dataclass
class PatternResult:
    status: Outcome    # PASS, FAIL, SKIP or ERROR
    message: str = ""
    path: str = ""


@dataclass
class _Walk:
    plans: "PatternPlans"
    seen: dict[str, bool] = field(default_factory=dict)
    # plans of maps this walk met that were not planned at load (substituted patterns): one list pattern is
    # checked against every item, so each of its maps is planned once per walk
    local: dict[int, "_Plan"] = field(default_factory=dict)

    def plan(self, pattern: dict) -> "_Plan":
        found = self.plans.known.get(id(pattern)) or self.local.get(id(pattern))
        if found is not None and found.pattern is pattern:
            return found
        plan = self.local[id(pattern)] = _plan_of(pattern)
        return plan

    def note_anchors(self, noted: tuple[str, ...], resource: Any) -> None:
        for key in noted:
            if not self.seen.get(key):
                self.seen[key] = _has_key(resource, parse_anchor(key).key)

    def keys_missing(self) -> bool:
        return any(not found and not is_kind(key, NEGATION) for key, found in self.seen.items())


def _has_key(resource: Any, key: str) -> bool:
    if isinstance(resource, dict):
        return key in resource
    if isinstance(resource, list):
        return any(_has_key(item, key) for item in resource)
    return False


def match_pattern(resource: Any, pattern: Any, plans: "PatternPlans | None" = None) -> PatternResult:
    """`plans`: what the compiled rule planned of this pattern at load (none: each map is planned here)."""
    walk = _Walk(plans or NO_PLANS)
    path, err = _element(resource, pattern, "/", walk)
    if err is None:
        return PatternResult(Outcome.PASS)
    if _skip(err):
        return PatternResult(Outcome.SKIP, err.text)
    if _is(err, NEGATION, _NEGATION_MSG):
        return PatternResult(Outcome.FAIL, err.text, path)
    if walk.keys_missing():
        return PatternResult(Outcome.ERROR, err.text)
    return PatternResult(Outcome.FAIL, err.text, path) if path else PatternResult(Outcome.ERROR, err.text)


def _element(resource: Any, pattern: Any, path: str, walk: _Walk) -> tuple[str, _Err | None]:
    if isinstance(pattern, dict):
        if not isinstance(resource, dict):
            return path, _Err(f"pattern and resource have different structures. Path: {path}")
        return _map(resource, pattern, path, walk)
    if isinstance(pattern, list):
        if not isinstance(resource, list):
            return path, _Err(f"validation rule failed at path {path}, resource does not satisfy the expected "
                              "overlay pattern")
        return _array(resource, pattern, path, walk)
    if isinstance(resource, list):
        values = resource
    else:
        values = [resource]
    for value in values:
        if not validate_value(value, pattern):
            return path, _Err(f"resource value '{_show(resource)}' does not match '{_show(pattern)}' at path {path}")
    return "", None


def _show(value: Any) -> str:
    return "<nil>" if value is None else str(value)


@frozen_dataclass
class _Plan:
    """What the walk needs to know about one pattern map, independent of the resource."""

    pattern: dict
    noted: tuple[str, ...]    # condition, existence and negation anchors (whether the resource has their keys)
    anchors: tuple[str, ...]  # validation anchors, in the order Kyverno evaluates them
    plain: tuple[str, ...]    # the other keys, in Kyverno's order
    has_metadata: bool        # a `metadata` key (plain or anchored): its label/annotation wildcards need the resource


def _plan_of(pattern: dict) -> _Plan:
    anchors = sorted(k for k in pattern if is_kind(k, CONDITION, EXISTENCE, EQUALITY, NEGATION))
    plain = {k: v for k, v in pattern.items() if k not in anchors}
    noted = tuple(k for k in pattern if is_kind(k, CONDITION, EXISTENCE, NEGATION))
    has_metadata = any(k == "metadata" or (parse_anchor(k) and parse_anchor(k).key == "metadata") for k in pattern)
    return _Plan(pattern, noted, tuple(anchors), tuple(_plain_order(plain)), has_metadata)


@frozen_dataclass
class PatternPlans:
    """The plans of every map of a pattern that has no variables, made when its rule is compiled and only
    read afterwards: that pattern is the same object on every request, its maps found by identity."""

    known: Mapping[int, _Plan]

    @classmethod
    def of(cls, pattern: Any) -> "PatternPlans":
        known: dict[int, _Plan] = {}
        stack = [pattern]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                known[id(node)] = _plan_of(node)
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)
        return cls(known)


NO_PLANS = PatternPlans({})


def _map(resource: dict, pattern: dict, path: str, walk: _Walk) -> tuple[str, _Err | None]:
    plan = walk.plan(pattern)
    if plan.has_metadata:
        expanded = expand_metadata_wildcards(pattern, resource)
        if expanded is not pattern:
            plan, pattern = _plan_of(expanded), expanded
    walk.note_anchors(plan.noted, resource)
    skips: list[_Err] = []
    applied = 0
    for key in plan.anchors:
        handler_path, err = _handle(key, pattern[key], resource, path, walk)
        if err is None:
            applied += 1
            continue
        if _skip(err):
            skips.append(err)
            continue
        if not any(not s.pattern_error for s in skips):
            return handler_path, err
    if skips and (applied == 0 or any(not s.pattern_error for s in skips)):
        return path, _Err("; ".join(s.text for s in skips), pattern_error=True)
    for key in plan.plain:
        handler_path, err = _handle(key, pattern[key], resource, path, walk)
        if err is not None:
            return handler_path, err
    return "", None


def _plain_order(plain: dict) -> list[str]:
    """Kyverno pushes global anchors and keys with nested anchors to the front (in reverse sorted order)."""
    front: list[str] = []
    back: list[str] = []
    for key in sorted(plain):
        if is_kind(key, GLOBAL) or has_nested_anchors(plain[key]):
            front.insert(0, key)
        else:
            back.append(key)
    return front + back


def _handle(key: str, pattern: Any, resource: dict, path: str, walk: _Walk) -> tuple[str, _Err | None]:
    anchor = parse_anchor(key)
    if anchor is None or anchor.modifier not in (CONDITION, GLOBAL, EXISTENCE, EQUALITY, NEGATION):
        return _plain(key, pattern, resource, path, walk)
    here = f"{path}{anchor.key}/"
    present = anchor.key in resource
    value = resource.get(anchor.key)
    if anchor.modifier == NEGATION:
        if present:
            return here, _anchor_err(NEGATION, _NEGATION_MSG, f"{here} is not allowed")
        return "", None
    if anchor.modifier == EXISTENCE:
        return _existence(value, pattern, here, walk) if present else ("", None)
    if not present:
        if anchor.modifier == CONDITION:
            return here, _anchor_err(CONDITION, _CONDITION_MSG, "conditional anchor key doesn't exist in the resource")
        return "", None
    inner_path, err = _element(value, pattern, here, walk)
    if err is None:
        return "", None
    if anchor.modifier == CONDITION:
        return inner_path, _anchor_err(CONDITION, _CONDITION_MSG, err.text)
    if anchor.modifier == GLOBAL:
        return inner_path, _anchor_err(GLOBAL, _GLOBAL_MSG, err.text)
    return inner_path, err


def _plain(key: str, pattern: Any, resource: dict, path: str, walk: _Walk) -> tuple[str, _Err | None]:
    value = resource.get(key)
    if pattern == "*":
        if value is not None:
            return "", None
        return path, _Err(f"{path}/{key} not found")
    return _element(value, pattern, f"{path}{key}/", walk)


def _existence(value: Any, pattern: Any, path: str, walk: _Walk) -> tuple[str, _Err | None]:
    if not isinstance(value, list):
        return path, _Err("invalid resource type: Existence ^ () anchor can be used only on list/array type resource")
    if not isinstance(pattern, list):
        return path, _Err("invalid pattern type: Pattern has to be of list to compare against resource")
    for item_pattern in pattern:
        if not isinstance(item_pattern, dict):
            return path, _Err("invalid pattern type: Pattern has to be of type map to compare against items")
        if not any(_element(item, item_pattern, f"{path}{i}/", walk)[1] is None for i, item in enumerate(value)):
            return path, _Err(f"existence anchor validation failed at path {path}")
    return "", None


def _array(resource: list, pattern: list, path: str, walk: _Walk) -> tuple[str, _Err | None]:
    if not pattern:
        return path, _Err("pattern Array empty")
    first = pattern[0]
    if isinstance(first, dict):
        return _each(resource, [first] * len(resource), path, walk)
    if not isinstance(first, list):
        return _element(resource, first, path, walk)
    if len(resource) < len(pattern):
        return "", _Err(f"validate Array failed, array length mismatch, resource Array len is {len(resource)} and "
                        f"pattern Array len is {len(pattern)}")
    return _each(resource[:len(pattern)], pattern, path, walk)


def _each(resource: list, patterns: list, path: str, walk: _Walk) -> tuple[str, _Err | None]:
    skips: list[_Err] = []
    applied = 0
    for index, (item, item_pattern) in enumerate(zip(resource, patterns)):
        item_path, err = _element(item, item_pattern, f"{path}{index}/", walk)
        if err is None:
            applied += 1
        elif _skip(err):
            skips.append(err)
        else:
            return item_path, err
    if applied == 0 and skips:
        return path, _Err("; ".join(s.text for s in skips), pattern_error=True)
    return "", None


def expand_metadata_wildcards(pattern: dict, resource: dict) -> dict:
    """Wildcard keys under metadata.labels/annotations take the name of the first matching resource key."""
    meta_key = next((k for k in pattern if k == "metadata" or (parse_anchor(k) and parse_anchor(k).key == "metadata")),
                    None)
    meta, res_meta = pattern.get(meta_key) if meta_key else None, resource.get("metadata")
    if not isinstance(meta, dict) or not isinstance(res_meta, dict):
        return pattern
    meta = dict(meta)
    for tag in ("labels", "annotations"):
        tag_key = next((k for k in meta if k == tag or (parse_anchor(k) and parse_anchor(k).key == tag)), None)
        values = meta.get(tag_key) if tag_key else None
        res_tag_key = next((k for k in res_meta if k == tag), None)
        res_values = res_meta.get(res_tag_key) if res_tag_key else None
        if not isinstance(values, dict) or not isinstance(res_values, dict):
            continue
        strings = {k: v for k, v in values.items() if isinstance(v, str)}
        meta[tag_key] = {_expand_key(k, res_values): v for k, v in strings.items()}
    return {**pattern, meta_key: meta}


def _expand_key(key: str, resource_values: dict) -> str:
    if not contains_wildcard(key):
        return key
    anchor = parse_anchor(key)
    bare = anchor.key if anchor else key
    found = next((k for k in resource_values if wildcard_match(bare, k)), bare)
    return anchor.__class__(anchor.modifier, found).render() if anchor else found
