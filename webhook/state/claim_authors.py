"""Which ResourceClaims the scheduler itself created (KEP-5004 extended-resource claims).

A tenant can write a claim's annotation `resource.kubernetes.io/extended-resource-claim` and an
ownerReference to their own pod; they cannot send a review whose `userInfo` is the scheduler's. The
quota charges such a claim as its pod's legacy GPUs only when the scheduler made it: shown by the
pod's `status.extendedResourceClaimStatus` (written by the scheduler) once it names the claim, and
before that by this record, made when the scheduler's own CREATE of the claim was admitted.

The record is per process and keyed by the claim's uid, which the API server assigns before
validating admission: a claim deleted and made again under the same name by someone else is not
the one recorded. At most one claim per pod is recorded (the scheduler makes one per pod); a second
one for the same pod is recorded only once the first is gone. A record lost with a restart (or held
by another replica) only charges the claim in full until the pod's status names it.
"""

from __future__ import annotations

from typing import Callable

from webhook.model.quickinit import frozen_dataclass

MAX_RECORDS = 100_000  # far more claims than pods being scheduled at once; the oldest go first


@frozen_dataclass
class AuthoredClaim:
    namespace: str
    name: str
    uid: str
    pod_uid: str


class ClaimAuthors:
    """Claims created by the scheduler, by (namespace, name), and the one claim recorded per pod."""

    def __init__(self, limit: int = MAX_RECORDS) -> None:
        self.limit = limit
        self._claims: dict[tuple[str, str], AuthoredClaim] = {}
        self._by_pod: dict[tuple[str, str], AuthoredClaim] = {}

    def record(self, claim: AuthoredClaim, exists: Callable[[AuthoredClaim], bool]) -> bool:
        """Record `claim` unless another claim recorded for its pod still `exists`; True when recorded."""
        if not claim.uid or not claim.pod_uid:
            return False  # nothing to tie the record to: the claim is charged in full
        other = self._by_pod.get((claim.namespace, claim.pod_uid))
        if other is not None and other != claim:
            if exists(other):
                return False
            self.forget(other.namespace, other.name)
        self.forget(claim.namespace, claim.name)
        while len(self._claims) >= self.limit:
            oldest = next(iter(self._claims.values()))
            self.forget(oldest.namespace, oldest.name)
        self._claims[(claim.namespace, claim.name)] = claim
        self._by_pod[(claim.namespace, claim.pod_uid)] = claim
        return True

    def forget(self, namespace: str, name: str, uid: str = "") -> None:
        """The claim is gone (or its CREATE was not admitted after all); `uid`: only that very claim."""
        claim = self._claims.get((namespace, name))
        if claim is None or (uid and claim.uid != uid):
            return
        del self._claims[(namespace, name)]
        if self._by_pod.get((namespace, claim.pod_uid)) == claim:
            del self._by_pod[(namespace, claim.pod_uid)]

    def created_by_scheduler(self, namespace: str, name: str, uid: str) -> bool:
        claim = self._claims.get((namespace, name))
        return claim is not None and bool(uid) and claim.uid == uid

    def __len__(self) -> int:
        return len(self._claims)
