"""The compiled-policy interface the engine dispatches to, and what an evaluation returns.

Every policy family (the platform batteries, CEL admission policies, Kyverno policies) compiles its
documents into objects of this shape; the engine knows nothing else about them.
"""

from __future__ import annotations

from dataclasses import field
from enum import Enum
from types import MappingProxyType
from typing import Any, Callable, Mapping, Protocol

from webhook.model.activation import admission_activation, request_variable
from webhook.model.cluster import ClusterState
from webhook.model.lookups import NO_LOOKUPS, Lookups
from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import PolicyId, RuleResult
from webhook.model.review import AdmissionRequest

__all__ = ["PolicyId", "Phase", "FailurePolicy", "SourceRef", "Condition", "EvalContext", "MutationOutcome",
           "ValidationOutcome", "PolicyTraits", "CompiledPolicy"]


class Phase(str, Enum):
    MUTATE = "mutate"
    VALIDATE = "validate"


class FailurePolicy(str, Enum):
    FAIL = "Fail"
    IGNORE = "Ignore"


@frozen_dataclass
class SourceRef:
    file: str
    document: int

    def __str__(self) -> str:
        return f"{self.file}#{self.document}"


class Condition(Protocol):
    """A compiled match condition (CEL). Raises on evaluation error; the dispatcher applies the failure policy."""

    expression: str

    def __call__(self, activation: Mapping[str, Any]) -> bool: ...


@frozen_dataclass(eq=False, dict_init=True)
class EvalContext:
    """Everything a policy may read for one request; built once per request by the dispatcher."""

    state: ClusterState
    namespace: Mapping[str, Any] | None  # the request's Namespace object, if known
    dry_run: bool
    lookups: Lookups = NO_LOOKUPS  # objects, global context, HTTP, images: what the cluster state can answer
    request: AdmissionRequest | None = None
    background: bool = False  # a background scan re-checks an object the state already holds
    # `apply`/`test`: judged offline against a snapshot (files or a cluster read once), in which a namespace it lacks
    # does not exist; a serving webhook's state may just not have caught up with one
    offline: bool = False
    # time.monotonic() by which the request is answered (its budget): long loops inside one policy's
    # synchronous evaluation (Kyverno foreach) stop there instead of holding the event loop
    deadline: float = float("inf")
    # per-request scratch space: the `request` variable (built on first use) and whatever a family computes once
    # per request and shares between its policies, under keys the family owns (e.g. its converted activations)
    memo: dict[Any, Any] = field(default_factory=dict, repr=False)

    def activation(self, obj: Mapping[str, Any] | None) -> dict[str, Any]:
        """The Kubernetes-shaped CEL variables for `obj` (the object as this policy sees it; mutation changes it).

        The `request` part is built once per request, and only if some policy asks for it.
        """
        if self.request is None:
            raise ValueError("this evaluation context has no admission request")
        request_var = self.memo.get("request")
        if request_var is None:
            request_var = self.memo["request"] = request_variable(self.request)
        return admission_activation(self.request, request_var, obj, self.namespace)


@frozen_dataclass(dict_init=True)
class MutationOutcome:
    object: Mapping[str, Any]  # the mutated copy (the same object when nothing changed)
    results: tuple[RuleResult, ...] = ()
    creates: tuple[Mapping[str, Any], ...] = ()  # objects that must exist before the request is admitted
    warnings: tuple[str, ...] = ()


@frozen_dataclass(dict_init=True)
class ValidationOutcome:
    results: tuple[RuleResult, ...] = ()
    warnings: tuple[str, ...] = ()
    # undone when the request is denied after all, e.g. a quota reservation made moot by another policy
    rollbacks: tuple[Callable[[], None], ...] = ()
    # objects to create once the request is admitted (never on dryRun): standalone and `apply` record
    # and print them, live mode creates them through the API
    generates: tuple[Mapping[str, Any], ...] = ()


NOTHING_SHOWN: Mapping[str, Any] = MappingProxyType({})


@frozen_dataclass
class PolicyTraits:
    """What the engine and the tools read of a policy besides its identity, fixed when the policy is built."""

    # reinvocationPolicy IfNeeded: the engine runs the policy once more if a later mutation changed the object
    reinvoke: bool = False
    # mutate() never edits the object it is handed: the engine need not copy it first
    copies_input: bool = False
    # how the Kyverno CLI reports a resource the policy does not match: skip (reason Excluded), or not at all
    # (`test` compares so: webhook.testsuite.check)
    excluded_when_unmatched: bool = True
    # how its family evaluates it, and why (`validate --explain`); families with one way say so
    route: str = "reference"
    why: str = ""
    # what its policy object's status shows beside the Ready condition, as the kind's own engine shows it
    # (Kyverno's `status.autogen`: the rules it made for pod controllers), as a JSON merge patch of that status
    # (None removes a field); empty for most kinds
    shown: Mapping[str, Any] = field(default_factory=lambda: NOTHING_SHOWN)


class CompiledPolicy(Protocol):
    id: PolicyId
    source: SourceRef
    phases: frozenset[Phase]  # a policy may take part in both
    failure_policy: FailurePolicy
    # a compile error kept as a value: the dispatcher turns it into an `error` result governed by
    # failure_policy, and never calls matches/mutate/validate
    error: str | None
    annotations: Mapping[str, str]  # metadata.annotations (reports read severity, category)
    background: bool  # evaluated by background scans and `report`

    @property
    def traits(self) -> PolicyTraits: ...

    def matches(self, request: AdmissionRequest, obj: Mapping[str, Any] | None, ctx: EvalContext) -> bool:
        """The family's own matcher; may raise, which is an `error` result under failure_policy."""

    async def mutate(self, request: AdmissionRequest, obj: dict[str, Any], ctx: EvalContext) -> MutationOutcome:
        """Called only if Phase.MUTATE is in phases; `obj` is the policy's own copy."""

    async def validate(self, request: AdmissionRequest, obj: Mapping[str, Any], ctx: EvalContext) -> ValidationOutcome:
        """Called only if Phase.VALIDATE is in phases."""
