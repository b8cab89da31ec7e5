"""Quantities in the request's own object that no quota can count: refused with the field that holds them.

The API server accepts decimal quantities of any size (`storage: 1e99999999`); counting one would either
overflow every limit or, read as "not a quantity", count nothing. Either way the user should hear which
field to fix, so the request is refused before counting.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from webhook.model.cluster import POD, PVC
from webhook.model.quantity import QuantityRangeError, parse_quantity


def _resource_fields(resources: Any, where: str) -> Iterator[tuple[str, Any]]:
    if not isinstance(resources, Mapping):
        return
    for section in ("limits", "requests"):
        values = resources.get(section)
        if isinstance(values, Mapping):
            for name, value in values.items():
                yield f"{where}.{section}[{name}]", value


def _pod_fields(pod: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    spec = pod.get("spec") or {}
    for field in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(field) or []):
            if isinstance(container, Mapping):
                yield from _resource_fields(container.get("resources"), f"spec.{field}[{index}].resources")
    yield from _resource_fields(spec.get("resources"), "spec.resources")
    for index, volume in enumerate(spec.get("volumes") or []):
        template = (volume.get("ephemeral") or {}).get("volumeClaimTemplate") if isinstance(volume, Mapping) else None
        if isinstance(template, Mapping):
            yield from _resource_fields((template.get("spec") or {}).get("resources"),
                                        f"spec.volumes[{index}].ephemeral.volumeClaimTemplate.spec.resources")


def _fields(kind: str, obj: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    if kind == POD:
        yield from _pod_fields(obj)
    elif kind == PVC:
        yield from _resource_fields((obj.get("spec") or {}).get("resources"), "spec.resources")


def out_of_range(kind: str, obj: Mapping[str, Any]) -> str | None:
    """A message naming the first quantity too large to count, or None."""
    for field, value in _fields(kind, obj):
        try:
            parse_quantity(value)
        except QuantityRangeError as exc:
            return f"{kind} field {field} is out of range ({exc}); ask for what the workload needs, such as 1 or 30Gi"
        except (ValueError, TypeError):
            continue  # not a quantity at all: the API server refuses those itself
    return None
