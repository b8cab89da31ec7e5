"""A cluster state with a few objects laid over it, read-only: what a dry run would have created.

A dry run creates nothing (the webhook registers `sideEffects: NoneOnDryRun`), so the validating call of a
`kubectl create --dry-run=server` would judge the mutated pod without the claim template it names, which counts
nothing while it does not exist. The engine judges such a request with the templates laid over the state instead
(AdmissionEngine._judged_as_created). Nothing is written through it; it tells no listener of anything, so the
quota counts on it from scratch.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from webhook.model.cluster import CLUSTER_SCOPED, ClusterState, CreateResult, ObjectKey, StateHook, never_expires


class OverlaidState:
    def __init__(self, base: ClusterState, laid_over: Sequence[Mapping[str, Any]]) -> None:
        self.base = base
        self.lookups = base.lookups
        self._laid_over = {ObjectKey.of(obj): obj for obj in laid_over}

    def _key(self, kind: str, namespace: str, name: str) -> ObjectKey:
        return ObjectKey(kind, "" if kind in CLUSTER_SCOPED else namespace, name)

    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        found = self.base.get(kind, namespace, name)
        return found if found is not None else self._laid_over.get(self._key(kind, namespace, name))

    def list(self, kind: str, namespace: str = "") -> list[Mapping[str, Any]]:
        listed = self.base.list(kind, namespace)
        extra = [obj for key, obj in self._laid_over.items()
                 if key.kind == kind and (not namespace or key.namespace in ("", namespace))
                 and self.base.get(key.kind, key.namespace, key.name) is None]
        return listed + extra if extra else listed

    async def create(self, obj: Mapping[str, Any], timeout: float) -> CreateResult:
        raise RuntimeError("a state with objects laid over it is read-only")  # nothing writes during a dry run

    async def read_through(self, kind: str, namespace: str, name: str, timeout: float) -> Mapping[str, Any] | None:
        found = await self.base.read_through(kind, namespace, name, timeout)
        return found if found is not None else self._laid_over.get(self._key(kind, namespace, name))

    def record_admitted(self, obj: Mapping[str, Any], operation: str) -> None:
        """Nothing: a dry run records nothing."""

    def record_deleted(self, kind: str, namespace: str, name: str, options: Mapping[str, Any] | None = None) -> None:
        """Nothing: a dry run records nothing."""

    def kinds(self) -> list[str]:
        return sorted(set(self.base.kinds()) | {key.kind for key in self._laid_over})

    def add_listener(self, hook: StateHook, expired: Callable[[], bool] = never_expires) -> bool:
        return False  # nothing changes in a dry run

    def sync_details(self) -> dict[str, Any]:
        return self.base.sync_details()

    @property
    def synced(self) -> bool:
        return self.base.synced
