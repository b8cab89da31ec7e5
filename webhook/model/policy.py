"""The compiled-policy interface the engine dispatches to, and what an evaluation returns.

Every policy family (the platform batteries, CEL admission policies, Kyverno policies) compiles its
documents into objects of this shape; the engine knows nothing else about them.
"""

from __future__ import annotations

from dataclasses import field
from enum import Enum
from typing import Any, Callable, Mapping, Protocol

from webhook.model.activation import admission_activation, request_variable
from webhook.model.cluster import ClusterState
from webhook.model.lookups import NO_LOOKUPS, Lookups
from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import PolicyId, RuleResult
from webhook.model.review import AdmissionRequest

__all__ = ["PolicyId", "Phase", "FailurePolicy", "SourceRef", "Condition", "EvalContext", "MutationOutcome",
           "ValidationOutcome", "CompiledPolicy", "PolicyBatch"]


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

    def matches(self, request: AdmissionRequest, obj: Mapping[str, Any] | None, ctx: EvalContext) -> bool:
        """The family's own matcher; may raise, which is an `error` result under failure_policy."""

    async def mutate(self, request: AdmissionRequest, obj: dict[str, Any], ctx: EvalContext) -> MutationOutcome:
        """Called only if Phase.MUTATE is in phases; `obj` is the policy's own copy."""

    async def validate(self, request: AdmissionRequest, obj: Mapping[str, Any], ctx: EvalContext) -> ValidationOutcome:
        """Called only if Phase.VALIDATE is in phases."""


class PolicyBatch(Protocol):
    """Validating policies of one family that answer for a request together, in one call (a family that
    evaluates several policies in one program). A member names its batch in an attribute `batch`; the
    engine asks each batch of a phase once per request, before any policy's turn, and a member it answered
    for then costs the engine one lookup instead of a matches() and a validate() call. A batch may also have
    a `warm()` method, which `serve` calls before publishing a snapshot (policy.snapshot.warm_batches) to
    build what its first requests would otherwise build on the request path."""

    def answers(self, request: AdmissionRequest, ctx: EvalContext) -> Mapping[CompiledPolicy, ValidationOutcome | None]:
        """member -> what its validate() would return, or None where its matches() would say no. A member
        left out is asked itself (matches, then validate) in its turn. Never raises: nothing answered is {}.
        Only pure members belong in one: answering early must change nothing another policy could see."""
