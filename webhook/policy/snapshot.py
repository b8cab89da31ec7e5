"""The immutable set of compiled policies the request path reads, and the store that swaps it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from webhook.model.errors import PolicyLoadError
from webhook.model.policy import CompiledPolicy, Mutator, Phase, Validator


@dataclass(frozen=True)
class PolicySnapshot:
    mutators: tuple[Mutator, ...] = ()
    validators: tuple[Validator, ...] = ()
    generation: int = 0
    fingerprint: str = ""
    annotations: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # policy name -> metadata.annotations

    @classmethod
    def of(cls, policies: Sequence[CompiledPolicy], generation: int, fingerprint: str = "",
           annotations: Mapping[str, Mapping[str, str]] | None = None) -> "PolicySnapshot":
        return cls(
            mutators=tuple(p for p in policies if p.phase is Phase.MUTATE),  # type: ignore[misc]
            validators=tuple(p for p in policies if p.phase is Phase.VALIDATE),  # type: ignore[misc]
            generation=generation,
            fingerprint=fingerprint,
            annotations=dict(annotations or {}),
        )

    @property
    def policies(self) -> tuple[CompiledPolicy, ...]:
        return self.mutators + self.validators


@dataclass(frozen=True)
class LoadStatus:
    """The outcome of the last load attempt; errors here mean the snapshot is an older, good one."""

    errors: tuple[PolicyLoadError, ...] = ()
    loaded: bool = False


@dataclass
class PolicyStore:
    """Holds the current snapshot. Readers take `store.snapshot` once per request: one attribute read, no lock."""

    snapshot: PolicySnapshot = field(default_factory=PolicySnapshot)
    status: LoadStatus = field(default_factory=LoadStatus)

    def publish(self, snapshot: PolicySnapshot) -> None:
        self.snapshot = snapshot
        self.status = LoadStatus(errors=(), loaded=True)

    def refuse(self, errors: Sequence[PolicyLoadError]) -> None:
        self.status = LoadStatus(errors=tuple(errors), loaded=self.status.loaded)
