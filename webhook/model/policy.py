"""The compiled-policy interfaces the engine dispatches to, and what an evaluation returns."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Mapping, Protocol

from webhook.model.cluster import ClusterState
from webhook.model.results import RuleResult
from webhook.model.review import AdmissionRequest
from webhook.model.selectors import MATCH_ALL, LabelSelector


class Phase(str, Enum):
    MUTATE = "mutate"
    VALIDATE = "validate"


class FailurePolicy(str, Enum):
    FAIL = "Fail"
    IGNORE = "Ignore"


@dataclass(frozen=True)
class SourceRef:
    file: str
    document: int

    def __str__(self) -> str:
        return f"{self.file}#{self.document}"


class Condition(Protocol):
    """A compiled match condition (CEL). Raises on evaluation error; the dispatcher applies the failure policy."""

    expression: str

    def __call__(self, activation: Mapping[str, Any]) -> bool: ...


@dataclass(frozen=True)
class MatchSpec:
    """Cheap checks first: kind and operation, then selectors, then CEL conditions."""

    kinds: frozenset[str]  # "Pod", "PersistentVolumeClaim", "*"
    operations: frozenset[str]
    namespace_selector: LabelSelector = MATCH_ALL
    object_selector: LabelSelector = MATCH_ALL
    namespaces: frozenset[str] = frozenset()  # empty: any
    exclude_namespaces: frozenset[str] = frozenset()
    conditions: tuple[Condition, ...] = ()


@dataclass(frozen=True)
class EvalContext:
    """Everything a policy may read for one request; built once per request by the dispatcher."""

    state: ClusterState
    namespace: Mapping[str, Any] | None  # the request's Namespace object, if known
    dry_run: bool


@dataclass(frozen=True)
class MutationOutcome:
    object: Mapping[str, Any]  # the mutated copy (the same object when nothing changed)
    results: tuple[RuleResult, ...] = ()
    creates: tuple[Mapping[str, Any], ...] = ()  # objects that must exist before the request is admitted
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class ValidationOutcome:
    results: tuple[RuleResult, ...] = ()
    warnings: tuple[str, ...] = ()
    # undone when the request is denied after all, e.g. a quota reservation made moot by another policy
    rollbacks: tuple[Callable[[], None], ...] = ()


class CompiledPolicy(Protocol):
    name: str
    kind: str
    source: SourceRef
    phase: Phase
    failure_policy: FailurePolicy
    match: MatchSpec


class Mutator(CompiledPolicy, Protocol):
    async def mutate(self, request: AdmissionRequest, obj: dict[str, Any], ctx: EvalContext) -> MutationOutcome: ...


class Validator(CompiledPolicy, Protocol):
    async def validate(self, request: AdmissionRequest, obj: Mapping[str, Any], ctx: EvalContext) -> ValidationOutcome: ...
