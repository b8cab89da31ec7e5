"""Rewrite a pod's legacy GPU limits into DRA claims: the plan (which claim for which container) and the pod.

Each container that had GPUs gets a claim of its own, generated from a ResourceClaimTemplate, so two
containers with one GPU each get two devices, as the device plugin gave them. The one exception
mirrors the device plugin too: a regular init container finishes before the next container starts,
and the kubelet hands its devices on, so with `initContainerClaims: Reuse` it borrows a claim of the
same content instead of holding extra devices for the pod's whole life.
"""

from __future__ import annotations

import hashlib
from typing import Any, Mapping, Sequence

from webhook.model.quickinit import frozen_dataclass
from webhook.platform.dra.config import InitClaims, RewriteConfig
from webhook.platform.dra.legacy import ContainerRef, LegacyUse
from webhook.platform.dra.templates import DeviceRequest, build_template

MAX_LABEL = 63


@frozen_dataclass(dict_init=True)
class ClaimUse:
    container: ContainerRef
    claim: str  # the entry of spec.resourceClaims the container references
    template: str  # the ResourceClaimTemplate behind it
    reused: bool  # borrowed from another container (regular init containers only)


@frozen_dataclass(dict_init=True)
class RewritePlan:
    pod: dict[str, Any]
    templates: tuple[dict[str, Any], ...]  # one per distinct content, in first-use order
    claims: tuple[ClaimUse, ...]
    uses: tuple[LegacyUse, ...]

    def summary(self) -> str:
        by_container = {c.container: c for c in self.claims}
        parts = []
        for use in self.uses:
            legacy = ", ".join(f"{a.resource}={a.count}" for a in use.amounts)
            claim = by_container.get(use.container)
            where = (f"claim {claim.claim}" + (" (shared, runs before the others)" if claim.reused else "")
                     + f" from ResourceClaimTemplate {claim.template}") if claim else "no devices"
            parts.append(f"{use.container.label}: {legacy} -> {where}")
        return "; ".join(parts)


def device_requests(use: LegacyUse, config: RewriteConfig, chosen: Sequence[str]) -> list[DeviceRequest]:
    """The DRA requests of one container; the user's choices apply to mappings that accept them."""
    requests = []
    for amount in use.amounts:
        if amount.count == 0:
            continue
        found = config.mapping_for(amount.resource)
        assert found is not None  # legacy_uses only keeps mapped keys
        mapping, profile = found
        selectors = mapping.selectors_for(profile) + (tuple(chosen) if mapping.user_choices else ())
        requests.append(DeviceRequest(amount.resource, mapping.request_for(profile), mapping.device_class,
                                      amount.count, selectors, mapping.driver_config))
    return requests


TEMPLATES_KEPT = 1024  # distinct (namespace, GPU amounts, choices) whose templates a policy keeps made


def template_for(use: LegacyUse, config: RewriteConfig, chosen: Sequence[str], namespace: str) -> dict[str, Any] | None:
    """build_template(device_requests(use, config, chosen), namespace, config.templates), or None when the
    container asks for no device.

    The template is the same for every pod of a namespace asking for the same amounts (one whole GPU, most
    of them; that is why templates are named by their content and shared): it is made once per policy and
    every such pod's plan holds that very template. Nothing edits it: the engine hands it to the cluster
    state's create, which stores a copy of what it changes (the metadata), as the API server does. The
    amounts and choices are the pod's own, so what is kept is bounded."""
    key = (namespace, use.amounts, tuple(chosen))
    made = config.templates_made.get(key, _UNMADE)
    if made is _UNMADE:
        requests = device_requests(use, config, chosen)
        made = build_template(requests, namespace, config.templates) if requests else None
        if len(config.templates_made) >= TEMPLATES_KEPT:
            config.templates_made.clear()
        config.templates_made[key] = made
    return made


_UNMADE = object()


class _ClaimNames:
    """Pod claim names: DNS labels, unique in the pod, readable (prefix-container)."""

    def __init__(self, prefix: str, taken: Sequence[str]) -> None:
        self.prefix = prefix
        self.taken = set(taken)

    def new(self, container: str) -> str:
        base = f"{self.prefix}-{container}"
        if len(base) > MAX_LABEL:
            digest = hashlib.sha256(container.encode()).hexdigest()[:6]
            base = f"{base[: MAX_LABEL - 7].rstrip('-')}-{digest}"
        name, n = base, 2
        while name in self.taken:
            suffix = f"-{n}"
            name, n = base[: MAX_LABEL - len(suffix)].rstrip("-") + suffix, n + 1
        self.taken.add(name)
        return name


def _assign(uses: Sequence[LegacyUse], templates: Mapping[ContainerRef, dict[str, Any]], config: RewriteConfig,
            names: _ClaimNames) -> dict[ContainerRef, ClaimUse]:
    """Containers that run side by side get claims of their own; regular init containers may borrow."""
    assigned: dict[ContainerRef, ClaimUse] = {}
    borrowable: dict[str, str] = {}  # template name -> claim of an app or regular init container
    concurrent: list[LegacyUse] = []
    sequential: list[LegacyUse] = []
    for use in uses:  # in pod order within each: regular init containers last, when they may borrow
        if use.container in templates:
            (sequential if use.container.regular_init else concurrent).append(use)
    for use in concurrent + sequential:
        ref = use.container
        template = templates[ref]["metadata"]["name"]
        if config.init_claims is InitClaims.REUSE and template in borrowable and ref.regular_init:
            assigned[ref] = ClaimUse(ref, borrowable[template], template, reused=True)
            continue
        assigned[ref] = ClaimUse(ref, names.new(ref.name), template, reused=False)
        if not ref.sidecar:  # a sidecar runs beside later init containers: never lend its devices
            borrowable.setdefault(template, assigned[ref].claim)
    return assigned


def _strip_legacy(container: dict[str, Any], use: LegacyUse) -> dict[str, Any]:
    resources = dict(container.get("resources") or {})
    legacy = {a.resource for a in use.amounts}
    for part in ("limits", "requests"):
        if part in resources:
            values = resources[part] or {}
            if type(values) is dict and values and values.keys().isdisjoint(legacy):
                continue  # nothing to take out: the map stays the very same (the patch diff skips it)
            kept = {k: v for k, v in values.items() if k not in legacy}
            if kept:
                resources[part] = kept
            else:
                del resources[part]  # an emptied map would only be noise in the pod
    return resources


def _apply(pod: Mapping[str, Any], uses: Sequence[LegacyUse], claims: Sequence[ClaimUse]) -> dict[str, Any]:
    # copy on write: the pod, its spec and the container lists that change; the rest is shared with the input
    out = dict(pod)
    spec = out["spec"] = dict(out["spec"])
    for field in {use.container.field for use in uses}:
        items = spec[field]
        # containers (dicts, from JSON) are copied below, those that change; anything else is copied here as it
        # always was, where dict() fails or converts it
        spec[field] = list(items) if all(type(c) is dict for c in items) else [dict(c) for c in items]
    by_container = {c.container: c for c in claims}
    for use in uses:
        ref = use.container
        # only the containers that change are copied; the others stay shared (the patch diff skips them)
        container = spec[ref.field][ref.position] = dict(spec[ref.field][ref.position])
        resources = _strip_legacy(container, use)
        claim = by_container.get(ref)
        if claim is not None:
            resources["claims"] = list(resources.get("claims") or []) + [{"name": claim.claim}]
        if resources:
            container["resources"] = resources
        else:
            container.pop("resources", None)  # only zero GPUs were asked for: nothing is left
    new = [c for c in claims if not c.reused]
    if new:
        spec["resourceClaims"] = list(spec.get("resourceClaims") or []) + [
            {"name": c.claim, "resourceClaimTemplateName": c.template} for c in new]
    return out


def plan_rewrite(pod: Mapping[str, Any], namespace: str, uses: Sequence[LegacyUse], config: RewriteConfig,
                 chosen: Sequence[str] = ()) -> RewritePlan:
    templates: dict[ContainerRef, dict[str, Any]] = {}
    for use in uses:
        template = template_for(use, config, chosen, namespace)
        if template is not None:
            templates[use.container] = template
    existing = [str(c.get("name", "")) for c in (pod.get("spec") or {}).get("resourceClaims") or []]
    assigned = _assign(uses, templates, config, _ClaimNames(config.claim_prefix, existing))
    # claims and templates listed in pod order (init containers first), whatever order they were assigned in
    claims = tuple(assigned[u.container] for u in uses if u.container in assigned)
    unique = {t["metadata"]["name"]: t for t in (templates[c.container] for c in claims)}
    return RewritePlan(_apply(pod, uses, claims), tuple(unique.values()), claims, tuple(uses))
