"""Find the legacy extended-resource GPUs of a pod: which container asks for how many of what.

Regular and init containers only: ephemeral containers cannot set resources, and a pod is never
created with them.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, NamedTuple

from webhook.model.quantity import QuantityRangeError, parse_quantity, plain_whole
from webhook.model.quickinit import frozen_dataclass
from webhook.platform.dra.config import RewriteConfig
from webhook.platform.base import is_mapping

CONTAINERS = "containers"
INIT_CONTAINERS = "initContainers"


class LegacyError(ValueError):
    """A legacy GPU amount the API server would refuse too; the message tells the user how to fix it."""


class ContainerRef(NamedTuple):
    """A container of the pod. A tuple: a rewrite keys several maps by the reference, and a tuple of text,
    an int and a bool is built, hashed and compared in C (a frozen dataclass did each in Python)."""

    field: str  # "containers" or "initContainers"
    position: int  # its index in that list (a NamedTuple field may not be called index: tuple.index)
    name: str
    sidecar: bool = False  # an init container with restartPolicy: Always runs beside the app containers

    @property
    def regular_init(self) -> bool:
        """Runs to completion before the next container starts, so it may borrow devices (see dra_rewrite)."""
        return self.field == INIT_CONTAINERS and not self.sidecar

    @property
    def label(self) -> str:
        kind = "sidecar" if self.sidecar else ("init container" if self.field == INIT_CONTAINERS else "container")
        return f"{kind} {self.name}"


@frozen_dataclass(dict_init=True)
class LegacyAmount:
    resource: str
    count: int  # 0 is allowed: the key goes, no device is asked for


@frozen_dataclass(dict_init=True)
class LegacyUse:
    container: ContainerRef
    amounts: tuple[LegacyAmount, ...]  # sorted by resource name, so equal requests build equal templates

    @property
    def devices(self) -> int:
        return sum(a.count for a in self.amounts)


def _entries(pod: Mapping[str, Any]) -> Iterator[tuple[str, int, Mapping[str, Any]]]:
    """(field, index, container) of every container that is a mapping, init containers first."""
    spec = pod.get("spec") or {}
    for field in (INIT_CONTAINERS, CONTAINERS):
        for index, container in enumerate(spec.get(field) or []):
            if is_mapping(container):
                yield field, index, container


def _ref(field: str, index: int, container: Mapping[str, Any]) -> ContainerRef:
    sidecar = field == INIT_CONTAINERS and container.get("restartPolicy") == "Always"
    return ContainerRef(field, index, str(container.get("name", "")), sidecar)


def containers(pod: Mapping[str, Any]) -> Iterator[tuple[ContainerRef, Mapping[str, Any]]]:
    for field, index, container in _entries(pod):
        yield _ref(field, index, container), container


def _whole(value: Any, where: str) -> int:
    whole = plain_whole(value)  # "1", "2": whole and in range, nothing to word
    if whole is not None:
        return whole
    try:
        amount = parse_quantity(value)
    except QuantityRangeError as exc:
        raise LegacyError(f"{where} is out of range ({exc}); GPUs come whole: use 0, 1, 2, ...") from None
    except ValueError:
        raise LegacyError(f"{where} is {value!r}, which is not a quantity; use a whole number such as 1") from None
    if amount < 0 or amount.denominator != 1:
        raise LegacyError(f"{where} is {value!r}; GPUs come whole: use 0, 1, 2, ...")
    return int(amount)


def _count(value: Any, ref: ContainerRef, part: str, resource: str) -> int:
    """_whole(value, where) with `where` worded only for a value that is no plain whole number."""
    whole = plain_whole(value)
    return whole if whole is not None else _whole(value, f"{ref.label}: {part}[{resource}]")


def _amount(ref: ContainerRef, resource: str, resources: Mapping[str, Any]) -> LegacyAmount:
    limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
    limit = _count(limits[resource], ref, "limits", resource) if resource in limits else None
    request = _count(requests[resource], ref, "requests", resource) if resource in requests else None
    if limit is not None and request is not None and limit != request:
        raise LegacyError(f"{ref.label}: {resource} has limit {limit} but request {request}; GPUs cannot be "
                          f"overcommitted, so set both to the same number (or set only the limit)")
    return LegacyAmount(resource, limit if limit is not None else request or 0)


def legacy_uses(pod: Mapping[str, Any], config: RewriteConfig) -> list[LegacyUse]:
    """Every container with at least one mapped legacy key, in pod order (init containers first)."""
    uses = []
    for field, index, container in _entries(pod):
        resources = container.get("resources") or {}
        if not is_mapping(resources):
            continue
        keys = {k for part in ("limits", "requests") for k in (resources.get(part) or {})}
        mapped = sorted(k for k in keys if config.mapping_for(k) is not None)
        if mapped:  # a reference only for the few containers that have GPUs
            ref = _ref(field, index, container)
            uses.append(LegacyUse(ref, tuple(_amount(ref, k, resources) for k in mapped)))
    return uses
