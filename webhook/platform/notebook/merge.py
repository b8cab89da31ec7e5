"""Merge rules in the manner of Kubeflow's PodDefaults: items are matched by name, an identical item is
left alone, a different one is kept, overridden or reported as a conflict as the policy says.

"Identical" means the pod's item holds every field the policy sets, with the same value: the API server
defaults fields (a Secret volume's defaultMode, a probe's successThreshold) and drops false/zero values
before it calls a webhook again, and neither may make a re-invocation see a conflict.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from webhook.model.quantity import parse_quantity
from webhook.model.quickinit import frozen_dataclass
from webhook.platform.base import is_mapping
from webhook.platform.notebook.config import MergeStrategy

_QUANTITY_PARENTS = frozenset({"requests", "limits"})  # maps of resource name to quantity
_QUANTITY_KEYS = frozenset({"sizeLimit"})
DESCRIBE_LIMIT = 200  # characters per side of a conflict: enough to see the difference, short enough to read


@frozen_dataclass
class Conflict:
    subject: str  # "volume 'home'", "env HOME of container 'mynb'"
    theirs: Any  # what the pod has
    ours: Any  # what the policy injects
    setting: str  # the policy field that decides, e.g. "spec.merge.volumes"

    def describe(self) -> str:
        theirs, ours = contrast(self.theirs, self.ours)
        return f"{self.subject}: the pod has {theirs}, the policy injects {ours}"


@dataclass
class MergeLog:
    """What one injection ran into; a per-request accumulator, never shared."""

    conflicts: list[Conflict] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)

    def resolve(self, strategy: MergeStrategy, conflict: Conflict) -> bool:
        """True when the policy's item replaces the pod's."""
        if strategy is MergeStrategy.OVERRIDE:
            return True
        if strategy is MergeStrategy.KEEP:
            self.kept.append(f"kept {describe(conflict.theirs)} ({conflict.subject}); "
                             f"the platform sets {describe(conflict.ours)}")
        else:
            self.conflicts.append(conflict)
        return False


def describe(item: Any, limit: int = DESCRIBE_LIMIT) -> str:
    if isinstance(item, Mapping) and set(item) == {"name", "value"}:
        text = f"{item['name']}={item['value']}"
    elif isinstance(item, str):
        text = repr(item)
    else:
        text = json.dumps(item, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def contrast(theirs: Any, ours: Any) -> tuple[str, str]:
    """Both sides of a conflict, reduced to the fields that differ (and the pod's own extra ones)."""
    if not (isinstance(theirs, Mapping) and isinstance(ours, Mapping)) or set(ours) == {"name", "value"}:
        return describe(theirs), describe(ours)
    differ = [k for k in ours if not covers({k: theirs[k]} if k in theirs else {}, {k: ours[k]})]
    theirs_view = {k: v for k, v in theirs.items() if k in differ or k not in ours}
    return describe(theirs_view), describe({k: ours[k] for k in differ})


def covers(existing: Any, desired: Any, quantity: bool = False) -> bool:
    """Does `existing` hold everything `desired` sets? Missing zero values count as set."""
    if is_mapping(desired):
        if not is_mapping(existing):
            return False
        for key, value in desired.items():
            if key not in existing:
                if _is_zero(value):
                    continue
                return False
            if key in _QUANTITY_PARENTS and _same_quantities(existing[key], value):
                continue
            if not covers(existing[key], value, quantity=key in _QUANTITY_KEYS):
                return False
        return True
    if isinstance(desired, list):
        return (isinstance(existing, list) and len(existing) == len(desired)
                and all(covers(e, d) for e, d in zip(existing, desired)))
    if quantity:
        return _same_quantity(existing, desired)
    return type(existing) is type(desired) and existing == desired


def _is_zero(value: Any) -> bool:
    """What Kubernetes drops when it serialises (omitempty): false, 0, "", empty lists and maps."""
    if isinstance(value, bool):
        return not value
    return value == 0 if isinstance(value, int) else value in ("", [], {})


def _same_quantity(a: Any, b: Any) -> bool:
    try:
        return parse_quantity(a) == parse_quantity(b)
    except (ValueError, TypeError):
        return False


def _same_quantities(existing: Any, desired: Any) -> bool:
    """resources.requests/limits: the API server canonicalises quantities ("1024Ki" comes back "1Mi")."""
    return (isinstance(existing, Mapping) and isinstance(desired, Mapping)
            and all(k in existing and _same_quantity(existing[k], v) for k, v in desired.items()))


def merge_named(parent: dict[str, Any], key: str, desired: Mapping[str, Any], strategy: MergeStrategy,
                subject: str, setting: str, log: MergeLog) -> None:
    """parent[key] is a list of named items (env, volumes); add or reconcile `desired` by its name."""
    items = parent.get(key) or []
    name, index = desired["name"], None
    for i, item in enumerate(items):  # a loop, not next() over a generator: most lists are searched to the end
        if item.get("name") == name:
            index = i
            break
    if index is None:
        parent[key] = [*items, dict(desired)]
        return
    existing = items[index]
    if covers(existing, desired):
        return
    if log.resolve(strategy, Conflict(subject, existing, desired, setting)):
        items[index] = dict(desired)


def normal_path(path: str) -> bool:
    """An absolute path that posixpath.normpath returns unchanged (most mount paths), told without it."""
    return (path[:1] == "/" and path[:2] != "//" and "//" not in path and "/./" not in path and "/../" not in path
            and not path.endswith(("/", "/.", "/..")))


def same_path(a: Any, b: Any) -> bool:
    if not (isinstance(a, str) and isinstance(b, str)):
        return False
    if a == b:
        return True  # normpath(a) == normpath(a)
    if normal_path(a) and normal_path(b):
        return False  # both are their own normal form, and they differ
    return posixpath.normpath(a) == posixpath.normpath(b)


def merge_mount(container: dict[str, Any], desired: Mapping[str, Any], strategy: MergeStrategy, setting: str,
                log: MergeLog) -> None:
    """Mounts are matched by volume name and by mount path: Kubernetes refuses two mounts at one path."""
    mounts = container.get("volumeMounts") or []
    name, path = desired["name"], desired["mountPath"]
    if type(path) is str and normal_path(path):  # the policy's paths are (render normalises them)
        # Another text is the same path only if normpath makes it so; normpath keeps (some of) the text's own
        # components, so the text holds `path`'s last one: a search in C rules out nearly every mount
        last = path.rpartition("/")[2]
        clashes = [i for i, m in enumerate(mounts) if m.get("name") == name or (
            same_path(a, path) if type(a := m.get("mountPath")) is not str else (a == path or (last in a and same_path(a, path))))]
    else:
        clashes = [i for i, m in enumerate(mounts) if m.get("name") == name or same_path(m.get("mountPath"), path)]
    place_mount(container, mounts, clashes, desired, strategy, setting, log)


def place_mount(container: dict[str, Any], mounts: list[Any], clashes: list[int], desired: Mapping[str, Any],
                strategy: MergeStrategy, setting: str, log: MergeLog) -> None:
    """The desired mount into `container`, given the indices of the mounts it clashes with."""
    if not clashes:
        container["volumeMounts"] = [*mounts, dict(desired)]
        return
    if any(covers(mounts[i], desired) for i in clashes):
        return
    subject = f"mount {desired['mountPath']} (volume {desired['name']!r}) of container {container.get('name')!r}"
    theirs = mounts[clashes[0]] if len(clashes) == 1 else [mounts[i] for i in clashes]
    if log.resolve(strategy, Conflict(subject, theirs, desired, setting)):
        kept = [m for i, m in enumerate(mounts) if i not in clashes]
        kept.insert(clashes[0], dict(desired))
        container["volumeMounts"] = kept


def merge_scalar(container: dict[str, Any], key: str, desired: str, strategy: MergeStrategy, subject: str, setting: str,
                 log: MergeLog, replaceable: Iterable[str] = ()) -> None:
    """A single field (workingDir): unset or a controller default is replaced; a user's value is a conflict."""
    current = container.get(key)
    if current in (None, "") or current == desired or any(same_path(current, r) for r in replaceable):
        container[key] = desired
        return
    if log.resolve(strategy, Conflict(subject, current, desired, setting)):
        container[key] = desired
