"""Which limits apply to one profile: its class, then the Kubeflow Profile's quota, then the policy's override.

Per dimension the most specific source wins: `spec.overrides.<namespace>` in the policy, then the
Profile's `spec.resourceQuotaSpec.hard` (the keys the policy names), then the class limits.
"""

from __future__ import annotations

from fractions import Fraction
from functools import cached_property
from typing import Any, Mapping

from webhook.model.cluster import PROFILE, ClusterState
from webhook.model.quantity import format_bytes, format_count, parse_quantity
from webhook.model.quickinit import frozen_dataclass
from webhook.platform.base import profile_info
from webhook.platform.quota.settings import LimitSpec, QuotaSettings


_NO_OVERRIDE = LimitSpec()  # frozen: one for every profile without an override


def gpus_text(amount: Fraction) -> str:
    return f"{format_count(amount)} GPU" + ("" if amount == 1 else "s")


@frozen_dataclass
class Limit:
    amount: Fraction | None  # None: not limited
    origin: str  # where it comes from, for messages: "class personal", "Profile jdoe", "policy override"

    # the limit as every quota message of its profile writes it: rendered once (LimitsMemo keeps the limits)
    @cached_property
    def as_gpus(self) -> str:
        assert self.amount is not None
        return gpus_text(self.amount)

    @cached_property
    def as_bytes(self) -> str:
        assert self.amount is not None
        return format_bytes(self.amount)


@frozen_dataclass
class ProfileLimits:
    namespace: str
    profile_class: str
    owner: str
    gpus: Limit
    storage: Limit
    notes: tuple[str, ...] = ()  # things the platform team should fix, shown as warnings

    @property
    def unlimited(self) -> bool:
        return self.gpus.amount is None and self.storage.amount is None


def _profile(settings: QuotaSettings, state: ClusterState, namespace: str) -> Mapping[str, Any] | None:
    """The Kubeflow Profile the limits read, if the policy reads one (Kubeflow names it after its namespace)."""
    return state.get(PROFILE, "", namespace) if settings.profile_override else None


def _profile_hard(profile: Mapping[str, Any] | None) -> Mapping[str, Any]:
    spec = (profile or {}).get("spec") or {}
    hard = (spec.get("resourceQuotaSpec") or {}).get("hard")
    return hard if isinstance(hard, Mapping) else {}


def _from_profile(hard: Mapping[str, Any], keys: tuple[str, ...], namespace: str, notes: list[str]) -> Fraction | None:
    for key in keys:
        if key in hard:
            try:
                return parse_quantity(hard[key])
            except ValueError:
                notes.append(f"Profile {namespace}: spec.resourceQuotaSpec.hard[{key!r}] = {hard[key]!r} is not a "
                             f"quantity and was ignored")
    return None


def _pick(override: Fraction | None, profile: Fraction | None, klass: Fraction | None, namespace: str,
          class_name: str) -> Limit:
    if override is not None:
        return Limit(override, f"policy override for {namespace}")
    if profile is not None:
        return Limit(profile, f"Profile {namespace}")
    return Limit(klass, f"class {class_name}")


def resolve_limits(settings: QuotaSettings, namespace_obj: Mapping[str, Any] | None, namespace: str,
                   state: ClusterState) -> ProfileLimits:
    return _resolve(settings, namespace_obj, namespace, _profile(settings, state, namespace))


class LimitsMemo:
    """resolve_limits per namespace, remembered with the Namespace and Profile objects it was resolved from.
    A cluster state replaces an object whole when it changes (it never edits one in place), so the same two
    objects give the same limits; any other object (or none where there was one) resolves them again.
    One entry per namespace the policy decided for; it lives and dies with the compiled policy."""

    def __init__(self, settings: QuotaSettings) -> None:
        self.settings = settings
        self._entries: dict[str, tuple[Mapping[str, Any] | None, Mapping[str, Any] | None, ProfileLimits]] = {}

    def resolve(self, namespace_obj: Mapping[str, Any] | None, namespace: str, state: ClusterState) -> ProfileLimits:
        profile = _profile(self.settings, state, namespace)
        entry = self._entries.get(namespace)
        if entry is not None and entry[0] is namespace_obj and entry[1] is profile:
            return entry[2]
        limits = _resolve(self.settings, namespace_obj, namespace, profile)
        self._entries[namespace] = (namespace_obj, profile, limits)
        return limits


def _resolve(settings: QuotaSettings, namespace_obj: Mapping[str, Any] | None, namespace: str,
             profile: Mapping[str, Any] | None) -> ProfileLimits:
    info = profile_info(namespace_obj, namespace)
    labels = ((namespace_obj or {}).get("metadata") or {}).get("labels") or {}
    notes: list[str] = []
    class_name = str(labels.get(settings.class_label) or settings.default_class)
    if class_name not in settings.classes:
        notes.append(f"profile class {class_name!r} of {namespace} is not defined in the quota policy; "
                     f"the {settings.default_class} limits apply")
        class_name = settings.default_class
    klass = settings.classes[class_name]
    override = settings.overrides.get(namespace, _NO_OVERRIDE)
    gpus = storage = None
    if settings.profile_override:
        hard = _profile_hard(profile)
        gpus = _from_profile(hard, settings.profile_gpu_keys, namespace, notes)
        storage = _from_profile(hard, settings.profile_storage_keys, namespace, notes)
    return ProfileLimits(
        namespace=namespace,
        profile_class=class_name,
        owner=info.owner,
        gpus=_pick(override.gpus, gpus, klass.gpus, namespace, class_name),
        storage=_pick(override.storage, storage, klass.storage, namespace, class_name),
        notes=tuple(notes),
    )
