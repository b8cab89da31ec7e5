"""Quantities in the request's own object that no quota can count: refused with the field that holds them.

The API server accepts decimal quantities of any size (`storage: 1e99999999`); counting one would either
overflow every limit or, read as "not a quantity", count nothing. Either way the user should hear which
field to fix, so the request is refused before counting.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterator, Mapping

from webhook.model.cluster import POD, PVC
from webhook.model.quantity import QuantityRangeError, parse_quantity, plainly_valid
from webhook.platform.base import is_mapping
from webhook.platform.quota.objects import container_sections

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


# Plain quantities (digits and a suffix, no sign, no spaces) whose value is surely below the API server's
# maximum (2**63 - 1): at most as many digits as keep digits x multiplier under 2**63 (18 digits alone, 15 with
# k or Ki, ..., one with E, 0-7 with Ei). A subset of what model.quantity.plainly_valid accepts, told by one
# regex call with no value built; anything else takes plainly_valid or the general walk, as before.
_SURELY_IN_RANGE = re.compile(r"[0-9]{1,18}[mun]?|[0-9]{1,15}(?:Ki|k)|[0-9]{1,12}Mi?|[0-9]{1,9}Gi?"
                              r"|[0-9]{1,6}Ti?|[0-9]{1,3}Pi?|[0-9]E|[0-7]Ei").fullmatch


def _all_plainly_valid(sections: list[dict[str, Any]]) -> bool:
    surely = _SURELY_IN_RANGE
    for values in sections:
        for value in values.values():
            if not (type(value) is str and surely(value)) and not plainly_valid(value):
                return False
    return True


def _plainly_in_range(kind: str, obj: Mapping[str, Any]) -> bool:
    """The usual pod: containers whose quantities are all plain text in range, no pod-level resources and no
    ephemeral volume. One pass, no field paths; anything else (False) takes the general walk below."""
    if kind != POD or type(obj) is not dict:
        return False
    spec = obj.get("spec")
    if type(spec) is not dict or spec.get("resources") is not None:
        return False
    sections = container_sections(spec)
    if sections is None or not _all_plainly_valid(sections):
        return False
    volumes = spec.get("volumes")
    if volumes is None:
        return True
    if type(volumes) is not list:
        return False
    for volume in volumes:  # a plain loop: a generator in all() costs more than the few volumes checked
        if type(volume) is not dict or volume.get("ephemeral") is not None:
            return False
    return True


def out_of_range(kind: str, obj: Mapping[str, Any]) -> str | None:
    """A message naming the first quantity too large to count, or None."""
    if _plainly_in_range(kind, obj):
        return None
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
