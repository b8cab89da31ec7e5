"""The quota's side of the shared reservation ledger (webhook/state/replicas.py): the Hold an admission
records, and the Holds of other replicas counted as charges beside what the state shows."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Iterable, Mapping

from webhook.model.cluster import POD, RESOURCE_CLAIM
from webhook.model.quickinit import frozen_dataclass
from webhook.platform.quota.reads import Key
from webhook.platform.quota.records import KnownUsage
from webhook.platform.quota.usage import POD_CLAIM_ANNOTATION, Charge, Usage, controller_pod
from webhook.state.replicas import Hold


@frozen_dataclass(dict_init=True)
class Added:
    """What a request adds to its profile (never less than zero): what other replicas count for it."""

    gpus: Fraction
    storage: Fraction
    unbounded: bool


NOTHING_ADDED = Added(Fraction(0), Fraction(0), False)


def hold_of(kind: str, name: str, obj: Mapping[str, Any], previous: Mapping[str, Any] | None, added: Added,
            request_uid: str) -> Hold:
    """What other replicas count for this admission. Keyed by the uid the API server gave the object (validating
    admission runs after it was set); a request without one (a hand-made review) is keyed by the review's uid,
    which no object ever shows, so its Hold lasts until it expires."""
    uid = str((obj.get("metadata") or {}).get("uid") or "") or f"review-{request_uid}"
    replaces = str((previous.get("metadata") or {}).get("resourceVersion") or "") if previous is not None else ""
    return Hold(uid, kind, name, added.gpus, added.storage, added.unbounded, replaces)


def without_its_pod(holds: tuple[Hold, ...], kind: str, obj: Mapping[str, Any]) -> tuple[Hold, ...]:
    """For a ResourceClaim the resourceclaim controller generated for a pod that another replica admitted and
    this one does not show yet: the claim's own charge stands for that pod's Hold (it is part of what the pod was
    charged), so the Hold is left out rather than counted beside it. A claim that only claims to be generated
    (its ownerReference is the tenant's to write) is charged in full all the same, so nothing is gained by it."""
    if kind != RESOURCE_CLAIM or not holds:
        return holds
    ref = controller_pod(obj)
    if ref is None or not ((obj.get("metadata") or {}).get("annotations") or {}).get(POD_CLAIM_ANNOTATION):
        return holds
    return tuple(h for h in holds if not (h.kind == POD and h.name == ref.get("name") and h.uid == ref.get("uid")))


def hold_charges(holds: Iterable[Hold], taken: Callable[[Key], bool]) -> dict[Key, Charge]:
    """The Holds as charges, keyed apart from the keys `taken` says are charged already (an object of the same
    name that the state shows is another object: a Hold counted here is one the state does not show)."""
    extra: dict[Key, Charge] = {}
    for hold in holds:
        key = (hold.kind, hold.name)
        if key in extra or taken(key):
            key = (hold.kind, f"{hold.name} (uid {hold.uid})")
        extra[key] = Charge(key[0], key[1], hold.gpus, hold.unbounded, hold.storage)
    return extra


def with_charges(usage: Usage, extra: Mapping[Key, Charge]) -> Usage:
    """`usage` with the extra charges beside its own (their keys are apart from its keys)."""
    if not extra:
        return usage
    added = extra.values()
    return KnownUsage({**usage.charges, **extra}, usage.gpus + sum(c.gpus for c in added),
                      usage.storage + sum(c.storage for c in added),
                      usage.unbounded + tuple(c for c in added if c.unbounded))
