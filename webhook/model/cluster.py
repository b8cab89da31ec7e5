"""The ClusterState protocol: what policies read of the cluster, and the few writes admission makes.

Narrow on purpose: the standalone store and the live informer cache both implement it.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Protocol

from webhook.model.lookups import Lookups
from webhook.model.quickinit import frozen_dataclass

# Kinds the state holds, by their API kind; every key below is one of these.
NAMESPACE = "Namespace"
POD = "Pod"
PVC = "PersistentVolumeClaim"
RESOURCE_CLAIM = "ResourceClaim"
RESOURCE_CLAIM_TEMPLATE = "ResourceClaimTemplate"
PROFILE = "Profile"
TRACKED_KINDS = (NAMESPACE, POD, PVC, RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE, PROFILE)
CLUSTER_SCOPED = frozenset({NAMESPACE, PROFILE})


@frozen_dataclass(dict_init=True)
class ObjectKey:
    kind: str
    namespace: str
    name: str

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> "ObjectKey":
        meta = obj.get("metadata") or {}
        kind = str(obj.get("kind", ""))
        namespace = "" if kind in CLUSTER_SCOPED else str(meta.get("namespace", ""))
        return cls(kind, namespace, str(meta.get("name", "")))

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


@frozen_dataclass(dict_init=True)
class CreateResult:
    created: bool  # False: it already existed, which admission treats as success
    object: Mapping[str, Any]


class StateUnavailable(Exception):
    """The backing store could not answer in time (live mode); the caller turns it into a clear denial."""


class StateRefused(Exception):
    """The backing store answered, and said no (the API server's 403 or 422): retrying will not help, and its
    reason is the user's answer."""


# told of every change a state sees: (kind, event type, the object; None on a relist)
StateHook = Callable[[str, str, Mapping[str, Any] | None], None]


def never_expires() -> bool:
    return False


class ClusterState(Protocol):
    # what policies may look up (by apiVersion and kind); the engine hands it to them in EvalContext
    lookups: Lookups

    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    def list(self, kind: str, namespace: str = "") -> list[Mapping[str, Any]]: ...

    async def create(self, obj: Mapping[str, Any], timeout: float) -> CreateResult: ...

    async def read_through(self, kind: str, namespace: str, name: str, timeout: float) -> Mapping[str, Any] | None:
        """An object the state may not show yet, asked of its source: None when the source has none either.
        The live state reads the API and keeps what it finds until its informer delivers it, telling its listeners
        (another replica may have just created it: a decision must not count it as absent); the standalone store
        is its own source and answers as `get`."""

    def record_admitted(self, obj: Mapping[str, Any], operation: str) -> None:
        """An object /validate admitted; the standalone store persists it, the live one waits for its informer.
        `obj` may be the request's own object: a store keeps copies of what it writes into (the object and its
        metadata), never `obj` itself."""

    def record_deleted(self, kind: str, namespace: str, name: str, options: Mapping[str, Any] | None = None) -> None:
        """A DELETE /validate admitted, with its DeleteOptions: the standalone store carries it out as the API
        server would (finalizers and pods' grace periods keep the object), the live one waits for its informer."""

    def kinds(self) -> list[str]:
        """Every kind it holds (a background scan and `report` look at each)."""

    def add_listener(self, hook: StateHook, expired: Callable[[], bool] = never_expires) -> bool:
        """Call `hook` on every change (a write, an informer's event); keep it quick and thread-safe. Dropped
        once `expired()` says so (a replaced policy's index), so reloads leave none behind. False when this state
        tells nobody (a dry run's overlay changes nothing): a caller keeping totals must recount instead."""

    def sync_details(self) -> dict[str, Any]:
        """For /readyz: per kind, what the state knows of its source (live: each informer's state); empty for a
        state that is its own source."""

    @property
    def synced(self) -> bool:
        """Whether it reflects the cluster (live: the informers' first lists arrived and none lost its watch);
        a policy that reads it cannot decide before. The standalone store always is."""
