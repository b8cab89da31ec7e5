"""Quantities in the request's own object that no quota can count: refused with the field that holds them.

The API server accepts decimal quantities of any size (`storage: 1e99999999`); counting one would either
overflow every limit or, read as "not a quantity", count nothing. Either way the user should hear which
field to fix, so the request is refused before counting.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping

from webhook.model.cluster import POD, PVC
from webhook.model.quantity import QuantityRangeError, parse_quantity, plainly_valid
from webhook.platform.base import is_mapping

Where = Callable[[], str]  # the field path of a resources block, built only for a message


def _resources(resources: Any, where: Where) -> Iterator[tuple[Where, str, Mapping[str, Any]]]:
    """(where, section, quantities) of one resources block: its limits, then its requests."""
    if not is_mapping(resources):
        return
    for section in ("limits", "requests"):
        values = resources.get(section)
        if is_mapping(values):
            yield where, section, values


def _pod_blocks(pod: Mapping[str, Any]) -> Iterator[tuple[Where, str, Mapping[str, Any]]]:
    spec = pod.get("spec") or {}
    for field in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(field) or []):
            if is_mapping(container):
                yield from _resources(container.get("resources"),
                                      lambda f=field, i=index: f"spec.{f}[{i}].resources")
    yield from _resources(spec.get("resources"), lambda: "spec.resources")
    for index, volume in enumerate(spec.get("volumes") or []):
        template = (volume.get("ephemeral") or {}).get("volumeClaimTemplate") if is_mapping(volume) else None
        if is_mapping(template):
            yield from _resources((template.get("spec") or {}).get("resources"),
                                  lambda i=index: f"spec.volumes[{i}].ephemeral.volumeClaimTemplate.spec.resources")


def _blocks(kind: str, obj: Mapping[str, Any]) -> Iterator[tuple[Where, str, Mapping[str, Any]]]:
    if kind == POD:
        yield from _pod_blocks(obj)
    elif kind == PVC:
        yield from _resources((obj.get("spec") or {}).get("resources"), lambda: "spec.resources")


def _all_plain(kind: str, obj: Mapping[str, Any]) -> bool:
    """Every quantity of the blocks `_blocks` visits is plainly valid (the usual request): then
    out_of_range finds nothing. The same blocks in plain loops, without the generators and the
    field-path closures a message would need; any doubt is left to the full walk."""
    if kind == POD:
        spec = obj.get("spec") or {}
        blocks = [container.get("resources") for field in ("initContainers", "containers")
                  for container in spec.get(field) or [] if is_mapping(container)]
        blocks.append(spec.get("resources"))
        for volume in spec.get("volumes") or []:
            template = (volume.get("ephemeral") or {}).get("volumeClaimTemplate") if is_mapping(volume) else None
            if is_mapping(template):
                blocks.append((template.get("spec") or {}).get("resources"))
    elif kind == PVC:
        blocks = [(obj.get("spec") or {}).get("resources")]
    else:
        return True
    for resources in blocks:
        if not is_mapping(resources):
            continue
        for section in ("limits", "requests"):
            values = resources.get(section)
            if is_mapping(values):
                for value in values.values():
                    if not plainly_valid(value):
                        return False
    return True


def out_of_range(kind: str, obj: Mapping[str, Any]) -> str | None:
    """A message naming the first quantity too large to count, or None."""
    try:
        if _all_plain(kind, obj):
            return None
    except Exception:  # an odd shape: the walk below meets it as it always did (or returns first)
        pass
    return _out_of_range(kind, obj)


def _out_of_range(kind: str, obj: Mapping[str, Any]) -> str | None:
    """The full walk (the reference): the first quantity too large to count, named by its field."""
    for where, section, values in _blocks(kind, obj):
        for name, value in values.items():
            if plainly_valid(value):
                continue  # "500m", "2Gi": in range, no need to build the value
            try:
                parse_quantity(value)
            except QuantityRangeError as exc:
                field = f"{where()}.{section}[{name}]"
                return f"{kind} field {field} is out of range ({exc}); ask for what the workload needs, such as 1 or 30Gi"
            except (ValueError, TypeError):
                continue  # not a quantity at all: the API server refuses those itself
    return None
