"""What a DELETE (or an UPDATE of an object being deleted) does to a stored object, as the API server decides it.

The standalone state must not free quota before the cluster would: a DELETE review does not remove an object
that still has finalizers (an allocated ResourceClaim carries resource.kubernetes.io/delete-protection, a
PVC in use kubernetes.io/pvc-protection), nor a pod that is deleted gracefully (scheduled, not finished, with
a grace period): the API server only sets `deletionTimestamp`, and the object (and its charge) stays until
the finalizers are gone, or the kubelet confirms with a DELETE of grace period 0.

`deletionTimestamp` is the API server's to set: an UPDATE keeps the stored value, whatever the request says,
so a tenant cannot mark an object deleted to free its charge.
"""

from __future__ import annotations

import time
from typing import Any, Mapping

from webhook.model.quickinit import frozen_dataclass

POD = "Pod"
RESOURCE_CLAIM = "ResourceClaim"
DEFAULT_POD_GRACE_SECONDS = 30  # core/v1 PodSpec.terminationGracePeriodSeconds
FINISHED_PHASES = frozenset({"Succeeded", "Failed"})
# added by the resourceclaim controller or the scheduler while a claim is allocated or reserved
CLAIM_DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"


@frozen_dataclass
class Deletion:
    """The stored object after the request: `remaining` None means it is gone."""

    remaining: Mapping[str, Any] | None


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _finalizers(obj: Mapping[str, Any]) -> list[Any]:
    finalizers = list(_meta(obj).get("finalizers") or ())
    status = obj.get("status") or {}
    if obj.get("kind") == RESOURCE_CLAIM and (status.get("allocation") or status.get("reservedFor")) \
            and CLAIM_DELETE_PROTECTION not in finalizers:
        finalizers.append(CLAIM_DELETE_PROTECTION)  # a seeded claim may omit what its controller would have added
    return finalizers


def _grace_seconds(obj: Mapping[str, Any], options: Mapping[str, Any] | None) -> int:
    """A pod's grace period for this DELETE (registry/core/pod CheckGracefulDelete); 0 for any other kind."""
    if obj.get("kind") != POD:
        return 0
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if not spec.get("nodeName") or status.get("phase") in FINISHED_PHASES:
        return 0  # never started, or finished: removed at once
    asked = (options or {}).get("gracePeriodSeconds")
    grace = asked if isinstance(asked, int) and not isinstance(asked, bool) else spec.get("terminationGracePeriodSeconds")
    if not isinstance(grace, int) or isinstance(grace, bool):
        grace = DEFAULT_POD_GRACE_SECONDS
    current = _meta(obj).get("deletionGracePeriodSeconds")
    if isinstance(current, int) and not isinstance(current, bool):
        grace = min(grace, current)  # a deletion in progress can only be shortened
    return max(grace, 0)


def _stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def deleted(obj: Mapping[str, Any], options: Mapping[str, Any] | None = None) -> Deletion:
    """A DELETE of the stored `obj` with these DeleteOptions."""
    grace = _grace_seconds(obj, options)
    if grace == 0 and not _finalizers(obj):
        return Deletion(None)
    meta = dict(_meta(obj))
    meta.setdefault("deletionTimestamp", _stamp())
    meta["deletionGracePeriodSeconds"] = grace
    return Deletion({**obj, "metadata": meta})


def updated(stored: Mapping[str, Any] | None, obj: Mapping[str, Any]) -> Deletion:
    """An UPDATE of `stored` to `obj`: the stored deletion marks kept; an object being deleted is gone once its
    last finalizer is (a pod once its grace period is 0, too)."""
    old = _meta(stored) if stored is not None else {}
    new = _meta(obj)
    marks = {k: old[k] for k in ("deletionTimestamp", "deletionGracePeriodSeconds") if k in old}
    if any(new.get(k) != old.get(k) for k in ("deletionTimestamp", "deletionGracePeriodSeconds")):
        meta = {k: v for k, v in new.items() if k not in ("deletionTimestamp", "deletionGracePeriodSeconds")}
        obj = {**obj, "metadata": {**meta, **marks}}
    if "deletionTimestamp" in marks and not _finalizers(obj) \
            and (obj.get("kind") != POD or marks.get("deletionGracePeriodSeconds") == 0):
        return Deletion(None)
    return Deletion(obj)
