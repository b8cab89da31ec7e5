"""GPUs one pod or one claim asks for: legacy extended resources and DRA device requests."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Iterable, Mapping

from webhook.model.quantity import MAX_VALUE, QuantityRangeError, parse_quantity
from webhook.model.quickinit import frozen_dataclass
from webhook.platform.quota.objects import container_sections
from webhook.platform.quota.settings import WeightTable
from webhook.platform.base import is_mapping

ZERO = Fraction(0)


@frozen_dataclass
class GpuAmount:
    gpus: Fraction = ZERO
    unbounded: bool = False  # allocationMode: All: every matching device, so no bounded quota can hold it

    def __add__(self, other: "GpuAmount") -> "GpuAmount":
        # a zero side (most claims and pods have one) adds nothing: no Fraction arithmetic for it
        gpus = self.gpus if not other.gpus else other.gpus if not self.gpus else self.gpus + other.gpus
        return GpuAmount(gpus, self.unbounded or other.unbounded)


NONE = GpuAmount()


def quantity_or_zero(value: Any) -> Fraction:
    """The API server validated these quantities already; a value it would refuse counts as nothing.
    One it accepts but no quota could hold (1e99999999) counts as the largest quantity: a request
    carrying one is refused before counting (quota.quantities), a stored object holding one fills the quota."""
    try:
        return parse_quantity(value)
    except QuantityRangeError:
        return Fraction(MAX_VALUE)
    except (ValueError, TypeError):
        return ZERO


# --- legacy extended resources (nvidia.com/gpu, nvidia.com/mig-*) -----------------------------------
def _container_amounts(container: Mapping[str, Any], table: WeightTable) -> dict[str, Fraction]:
    """Per counted resource: limits and requests must be equal for extended resources; take the larger."""
    resources = container.get("resources") or {}
    out: dict[str, Fraction] = {}
    for section in ("limits", "requests"):
        for name, value in (resources.get(section) or {}).items():
            if table.weight(name) is not None:
                out[name] = max(out.get(name, ZERO), quantity_or_zero(value))
    return out


def effective_requests(spec: Mapping[str, Any], table: WeightTable) -> dict[str, Fraction]:
    """The pod's effective request per resource, as Kubernetes computes it (KEP-753, native sidecars).

    App containers and restartable init containers (sidecars) run together and add up; each regular
    init container runs alone beside the sidecars started before it; the pod needs the larger of both.
    """
    init = [(c, _container_amounts(c, table)) for c in spec.get("initContainers") or []]
    app = [_container_amounts(c, table) for c in spec.get("containers") or []]
    names = {name for _, amounts in init for name in amounts} | {name for amounts in app for name in amounts}
    effective: dict[str, Fraction] = {}
    # Fraction arithmetic is slow: a zero amount (most containers for most names) is skipped, which changes
    # nothing, as amounts are never negative and init_peak never falls below sidecars
    for name in names:
        sidecars = init_peak = ZERO
        for container, amounts in init:
            amount = amounts.get(name)
            if not amount:
                continue
            if container.get("restartPolicy") == "Always":
                sidecars = sidecars + amount if sidecars else amount
                init_peak = max(init_peak, sidecars)
            else:
                init_peak = max(init_peak, sidecars + amount if sidecars else amount)
        running = sidecars
        for amounts in app:
            amount = amounts.get(name)
            if amount:
                running = running + amount if running else amount
        effective[name] = max(running, init_peak) if init_peak else running
    return effective


def _counts_nothing(spec: Mapping[str, Any], table: WeightTable) -> bool:
    """True when no container names a resource the table counts: the pod's legacy GPUs are then zero (most
    pods, and every pod whose GPUs the DRA rewrite turned into claims). One pass over plain dicts and lists,
    no per-container tables; False for a counted name or any unusual shape, which the general path handles
    (and refuses) exactly as before."""
    sections = container_sections(spec)
    if sections is None:
        return False
    exact, starts = table.exact, table.prefix_starts  # table.weight(name) is not None, for text names
    for values in sections:
        for name in values:
            if name in exact or type(name) is not str or name.startswith(starts):
                return False
    return True


def legacy_gpus(spec: Mapping[str, Any], table: WeightTable) -> Fraction:
    if _counts_nothing(spec, table):
        return ZERO  # what the sum below gives when no container has a counted resource
    total = ZERO
    for name, amount in effective_requests(spec, table).items():
        weight = table.weight(name) or ZERO
        if amount and weight:  # zero terms add nothing; weight 1 (the usual) multiplies by nothing
            term = amount if weight == 1 else amount * weight
            total = total + term if total else term
    return total


# --- DRA device requests (resource.k8s.io v1, v1beta2 and v1beta1 shapes) ----------------------------
def _exact(request: Mapping[str, Any], table: WeightTable) -> GpuAmount:
    weight = table.weight(str(request.get("deviceClassName", "")))
    if not weight:
        return NONE  # not a GPU class (a NIC, a test device): not this quota's business
    if request.get("allocationMode") == "All":
        return GpuAmount(unbounded=True)
    try:
        count = int(request.get("count") or 1)
    except (TypeError, ValueError):
        count = 1
    # one device, the usual request: its weight as it is (the same value), no Fraction arithmetic
    return GpuAmount(weight if count == 1 else weight * max(count, 0))


def device_request(request: Mapping[str, Any], table: WeightTable) -> GpuAmount:
    """One entry of spec.devices.requests. firstAvailable: the scheduler may pick any alternative,
    so the largest one counts (and one with allocationMode All makes the request unbounded)."""
    alternatives = request.get("firstAvailable")
    if isinstance(alternatives, list) and alternatives:
        amounts = [_exact(alt, table) for alt in alternatives if is_mapping(alt)]
        return GpuAmount(max((a.gpus for a in amounts), default=ZERO), any(a.unbounded for a in amounts))
    exactly = request.get("exactly")
    # v1 and v1beta2 nest the fields under `exactly`; v1beta1 keeps them on the request itself
    return _exact(exactly if is_mapping(exactly) else request, table)


def claim_spec_gpus(spec: Mapping[str, Any] | None, table: WeightTable) -> GpuAmount:
    """A ResourceClaimSpec: every request of the claim is allocated, so they add up."""
    requests: Iterable[Any] = ((spec or {}).get("devices") or {}).get("requests") or []
    total = NONE
    for request in requests:
        if is_mapping(request):
            total = total + device_request(request, table)
    return total
