"""Each profile's hard limits for the ResourceQuota backstop, read from the ProfileQuota policies.

The webhook counts GPUs as one sum across legacy resources and device classes, with weights; a
ResourceQuota can only bound each key on its own. So each key gets the most that key alone may
use within the profile's GPU limit (floor(limit / weight)): the API server then enforces a bound
that the webhook's sum never exceeds, atomically, whatever the webhook replicas did. Prefix
entries (nvidia.com/mig-*) name no single key and get none. Audit-mode policies add no backstop:
Audit must not block.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Mapping

from webhook.model.cluster import ClusterState
from webhook.model.results import Action
from webhook.platform.quota.accelerators import DEVICE_CLASS_RESOURCE_PREFIX
from webhook.platform.quota.policy import ProfileQuotaPolicy
from webhook.platform.quota.limits import ProfileLimits, resolve_limits
from webhook.platform.quota.settings import QuotaSettings
from webhook.policy.common import MatchSpec
from webhook.policy.snapshot import PolicyStore

DEVICE_CLASS_KEY = "{name}.deviceclass.resource.k8s.io/devices"
EXTENDED_KEY = "requests.{name}"
STORAGE_KEY = "requests.storage"
STORAGE_CLASS_KEY = "{name}.storageclass.storage.k8s.io/requests.storage"


def quota_keys(limits: ProfileLimits, settings: QuotaSettings) -> dict[str, Fraction]:
    hard: dict[str, Fraction] = {}
    gpus = limits.gpus.amount
    if gpus is not None:
        for name, weight in settings.rules.device_classes.exact.items():
            if weight > 0:
                hard[DEVICE_CLASS_KEY.format(name=name)] = Fraction(math.floor(gpus / weight))
        for name, weight in settings.rules.legacy.exact.items():
            # KEP-5004's deviceclass.resource.kubernetes.io/<class> is served by claims of that class: bounded above
            if weight > 0 and not name.startswith(DEVICE_CLASS_RESOURCE_PREFIX):
                hard[EXTENDED_KEY.format(name=name)] = Fraction(math.floor(gpus / weight))
    storage = limits.storage.amount
    if storage is not None:
        classes = sorted(settings.rules.storage_classes)
        keys = [STORAGE_CLASS_KEY.format(name=c) for c in classes] if classes else [STORAGE_KEY]
        for key in keys:
            hard[key] = Fraction(math.floor(storage))
    return hard


def _namespace_matches(match: MatchSpec, namespace: Mapping[str, Any]) -> bool:
    meta = namespace.get("metadata") or {}
    return match.matches_namespace_name(str(meta.get("name", ""))) and match.namespace_selector.matches(meta.get("labels"))


class QuotaPolicyLimits:
    """The enforcing ProfileQuota policies of the current snapshot; the tightest wins per key.

    The live runtime's backstop reads it (as its LimitsSource); the composition root builds it."""

    def __init__(self, store: PolicyStore, state: ClusterState) -> None:
        self.store = store
        self.state = state

    def hard_limits(self, namespace: Mapping[str, Any]) -> dict[str, Fraction] | None:
        name = str((namespace.get("metadata") or {}).get("name", ""))
        found: dict[str, Fraction] | None = None
        for policy in self.store.snapshot.validators:
            if not isinstance(policy, ProfileQuotaPolicy) or policy.action is Action.AUDIT:
                continue
            if not _namespace_matches(policy.match, namespace):
                continue
            hard = quota_keys(resolve_limits(policy.settings, namespace, name, self.state), policy.settings)
            if found is None:
                found = hard
            else:
                for key, amount in hard.items():
                    found[key] = min(amount, found.get(key, amount))
        return found
