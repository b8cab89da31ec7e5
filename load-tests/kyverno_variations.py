"""Seeded variations of a Kyverno test suite's resources, for the Kyverno differential.

A variation is a suite resource with one or two edits: a field removed, a scalar changed, a list grown by a
copy of one of its items, or a field copied from another resource of the same kind in the suite (so a good
pod picks up a bad pod's `hostPath`, and the reverse). The seed and the suite path fix every choice, so a
run is repeatable and a difference can be replayed from the report alone.
"""

from __future__ import annotations

import copy
import hashlib
import random
from dataclasses import dataclass
from typing import Any

Path_ = tuple[str | int, ...]

# Identity fields stay: a variation must still be the resource the suite's results name (plus a suffix).
_FIXED = {("apiVersion",), ("kind",), ("metadata",), ("metadata", "name"), ("metadata", "namespace")}


@dataclass(frozen=True)
class Variation:
    """One edited copy of a suite resource: its new name, the edits made (for the report), the object."""

    name: str
    source: str
    edits: tuple[str, ...]
    obj: dict


def suite_rng(seed: int, suite: str) -> random.Random:
    """A generator of its own per suite, so adding a suite to the corpus does not reshuffle the others."""
    digest = hashlib.sha256(f"{seed}:{suite}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _paths(node: Any, prefix: Path_ = ()) -> list[Path_]:
    out: list[Path_] = []
    if isinstance(node, dict):
        for key, value in node.items():
            out.append(prefix + (key,))
            out.extend(_paths(value, prefix + (key,)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out.append(prefix + (index,))
            out.extend(_paths(value, prefix + (index,)))
    return out


def _get(node: Any, path: Path_) -> Any:
    for step in path:
        node = node[step]
    return node


def _set(node: Any, path: Path_, value: Any) -> bool:
    """Sets path in node, creating maps on the way; False where a list index or a scalar is in the way."""
    for step in path[:-1]:
        if isinstance(node, dict):
            node = node.setdefault(step, {})
        elif isinstance(node, list) and isinstance(step, int) and step < len(node):
            node = node[step]
        else:
            return False
    last = path[-1]
    if isinstance(node, dict) and isinstance(last, str):
        node[last] = value
        return True
    if isinstance(node, list) and isinstance(last, int) and last < len(node):
        node[last] = value
        return True
    return False


def _show(path: Path_) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def _changed(value: Any, rng: random.Random, pool: list[Any]) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return rng.choice([0, -1, value + 1, value * 2, str(value)])
    if isinstance(value, str):
        same_type = [p for p in pool if isinstance(p, str) and p != value]
        choices = ["", value + "x", "*", value.upper(), "latest", value.split(":")[0]]
        if same_type:
            choices += [rng.choice(same_type)] * 3
        return rng.choice(choices)
    if value is None:
        return "x"
    return rng.choice([{}, [], "x"])


def _editable(obj: dict) -> list[Path_]:
    return [p for p in _paths(obj) if p not in _FIXED and p[:2] != ("metadata", "managedFields")]


def _edit(obj: dict, rng: random.Random, donors: list[dict], pool: list[Any]) -> str | None:
    paths = _editable(obj)
    if not paths:
        return None
    kind = rng.choice(("remove", "change", "grow", "copy", "copy"))
    if kind == "copy" and donors:
        donor = rng.choice(donors)
        donor_paths = _editable(donor)
        if donor_paths:
            path = rng.choice(donor_paths)
            if _set(obj, path, copy.deepcopy(_get(donor, path))):
                return f"copy {_show(path)} from {donor.get('metadata', {}).get('name')}"
        kind = "change"
    if kind == "grow":
        lists = [p for p in paths if isinstance(_get(obj, p), list) and _get(obj, p)]
        if lists:
            path = rng.choice(lists)
            target = _get(obj, path)
            item = copy.deepcopy(rng.choice(target))
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                item["name"] = f"{item['name']}-extra{len(target)}"
            target.append(item)
            return f"grow {_show(path)} to {len(target)}"
        kind = "change"
    if kind == "change":
        scalars = [p for p in paths if not isinstance(_get(obj, p), (dict, list))]
        if scalars:
            path = rng.choice(scalars)
            new = _changed(_get(obj, path), rng, pool)
            _set(obj, path, new)
            return f"change {_show(path)} to {new!r}"
    path = rng.choice(paths)
    parent = _get(obj, path[:-1])
    del parent[path[-1]]
    return f"remove {_show(path)}"


def _scalars(node: Any) -> list[Any]:
    if isinstance(node, dict):
        return [s for v in node.values() for s in _scalars(v)]
    if isinstance(node, list):
        return [s for v in node for s in _scalars(v)]
    return [node]


def variations(resources: list[dict], wanted: set[str], per_resource: int, rng: random.Random) -> list[Variation]:
    """per_resource variations of each resource named in wanted; donors are the suite's resources of its kind."""
    out: list[Variation] = []
    for resource in resources:
        meta = resource.get("metadata") or {}
        name = meta.get("name")
        if name not in wanted:
            continue
        donors = [r for r in resources if r is not resource and r.get("kind") == resource.get("kind")]
        pool = [s for r in donors for s in _scalars(r)]
        for index in range(per_resource):
            obj = copy.deepcopy(resource)
            edits = [e for e in (_edit(obj, rng, donors, pool) for _ in range(rng.choice((1, 1, 2)))) if e]
            new_name = f"{name}-v{index}"
            obj.setdefault("metadata", {})["name"] = new_name
            out.append(Variation(new_name, name, tuple(edits), obj))
    return out
