"""The immutable set of compiled policies the request path reads, and the store that swaps it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from webhook.model.errors import PolicyLoadError
from webhook.model.policy import CompiledPolicy, Phase, PolicyId
from webhook.model.quickinit import frozen_dataclass
from webhook.policy.broken import BrokenPolicy


@frozen_dataclass
class PolicySnapshot:
    policies: tuple[CompiledPolicy, ...] = ()  # load order
    generation: int = 0
    fingerprint: str = ""
    _by_phase: Mapping[Phase, tuple[CompiledPolicy, ...]] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, policies: Sequence[CompiledPolicy], generation: int, fingerprint: str = "") -> "PolicySnapshot":
        by_phase = {phase: tuple(p for p in policies if phase in p.phases) for phase in Phase}
        return cls(tuple(policies), generation, fingerprint, by_phase)

    def policies_for(self, phase: Phase) -> tuple[CompiledPolicy, ...]:
        """The policies taking part in `phase`, in load order (a policy in both phases is in both)."""
        return self._by_phase.get(phase, ())

    @property
    def mutators(self) -> tuple[CompiledPolicy, ...]:
        return self.policies_for(Phase.MUTATE)

    @property
    def validators(self) -> tuple[CompiledPolicy, ...]:
        return self.policies_for(Phase.VALIDATE)

    @property
    def annotations(self) -> Mapping[PolicyId, Mapping[str, str]]:
        """metadata.annotations by full policy identity (reports read severity, category, events)."""
        return {p.id: p.annotations for p in self.policies}


@frozen_dataclass
class LoadStatus:
    """The outcome of the last load attempt; errors here mean the snapshot is an older, good one."""

    errors: tuple[PolicyLoadError, ...] = ()
    loaded: bool = False
    # policies of the snapshot in service that compiled with an error kept as a value (they answer with their
    # failure policy): served, but shown, as the refused errors are
    broken: tuple[BrokenPolicy, ...] = ()


@dataclass
class PolicyStore:
    """Holds the current snapshot. Readers take `store.snapshot` once per request: one attribute read, no lock."""

    snapshot: PolicySnapshot = field(default_factory=PolicySnapshot)
    status: LoadStatus = field(default_factory=LoadStatus)

    def publish(self, snapshot: PolicySnapshot, broken: Sequence[BrokenPolicy] = ()) -> None:
        self.snapshot = snapshot
        self.status = LoadStatus(errors=(), loaded=True, broken=tuple(broken))

    def refuse(self, errors: Sequence[PolicyLoadError]) -> None:
        self.status = LoadStatus(errors=tuple(errors), loaded=self.status.loaded, broken=self.status.broken)
