"""What every CEL policy kind shares: identity, match constraints, match conditions, variables,
exceptions, autogen variants, and the activation it evaluates in."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from webhook.cel import Activation, CelCompiler, CelError
from webhook.families.cel.match import MatchResources, MatchSpecError, static_key
from webhook.families.cel.route import UNPLANNED, CelRoute
from webhook.families.cel.scope import CompileFailed, Expr, Scope, Variables, compile_expr
from webhook.model.activation import admission_activation, request_variable
from webhook.model.exception_trust import ANY_RESOURCE, exempts_in
from webhook.model.policy import NOTHING_SHOWN, EvalContext, FailurePolicy, Phase, PolicyId, PolicyTraits, SourceRef
from webhook.model.policy_scope import bound_lookups
from webhook.model.quickinit import frozen_dataclass
from webhook.model.review import AdmissionRequest

_VARIANTS = "cel-family.variant"  # this family's entries in the request's EvalContext cache
_KEY = "cel-family.match-key"  # the request's static_key, in its EvalContext memo
MAX_KEYS = 256  # static match decisions a policy keeps (one per resource and operation it is asked about)
DEFAULT_TIMEOUT = 10.0  # seconds: webhookConfiguration.timeoutSeconds when unset, as Kubernetes defaults it


@frozen_dataclass
class Conditions:
    exprs: tuple[Expr, ...] = ()

    @classmethod
    def compile(cls, cel: CelCompiler, raw: Any, field: str, env: str) -> "Conditions":
        if raw is None:
            return cls()
        if not isinstance(raw, list):
            raise CompileFailed(field, "must be a list of {name, expression}")
        return cls(tuple(compile_expr(cel, (c or {}).get("expression") if isinstance(c, Mapping) else None,
                                      f"{field}[{i}].expression", env) for i, c in enumerate(raw)))

    def holds(self, scope: Scope, failure_policy: FailurePolicy) -> bool:
        """Kubernetes' order: any false skips; otherwise an error fails (Fail) or skips (Ignore)."""
        errors = []
        for expr in self.exprs:
            try:
                if not scope.test(expr):
                    return False
            except CelError as exc:
                errors.append(str(exc))
        if errors and failure_policy is FailurePolicy.FAIL:
            raise CelError("; ".join(errors))
        return not errors


@frozen_dataclass
class Exception_:
    """A policies.kyverno.io PolicyException joined to the policy it names."""

    name: str
    namespace: str
    conditions: Conditions
    images: tuple[str, ...] = ()
    allowed_values: tuple[str, ...] = ()
    report_pass: bool = False
    reach: str = ANY_RESOURCE  # the namespace whose resources it may exempt (model/exception_trust.py)
    expires_at: float | None = None  # spec.expiresAt as a Unix time: after it, the exception applies to nothing

    @property
    def full(self) -> bool:
        return not self.images and not self.allowed_values

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@frozen_dataclass
class ExceptionOutcome:
    exempt: tuple[Exception_, ...] = ()  # full exemptions that matched: the policy is skipped
    allowed: Mapping[str, list[str]] = field(default_factory=lambda: {"allowedImages": [], "allowedValues": []})


def parse_match(raw: Any, field: str) -> MatchResources:
    try:
        return MatchResources.parse(raw)
    except MatchSpecError as exc:
        raise CompileFailed(f"{field}.{exc.field}" if exc.field else field, str(exc)) from None


def failure_policy(spec: Mapping[str, Any]) -> FailurePolicy:
    value = spec.get("failurePolicy") or "Fail"
    if value not in ("Fail", "Ignore"):
        raise CompileFailed("spec.failurePolicy", "must be Fail or Ignore")
    return FailurePolicy(value)


def spec_value(spec: Mapping[str, Any], *path: str) -> Any:
    """The value at `path` in nested mappings, None where any step is missing."""
    node: Any = spec
    for step in path:
        node = node.get(step) if isinstance(node, Mapping) else None
    return node


def enabled(spec: Mapping[str, Any], *path: str, default: bool = True) -> bool:
    node = spec_value(spec, *path)
    return default if node is None else node is True


def timeout(spec: Mapping[str, Any]) -> float:
    seconds = (spec.get("webhookConfiguration") or {}).get("timeoutSeconds")
    if seconds is None:
        return DEFAULT_TIMEOUT
    if not isinstance(seconds, int) or isinstance(seconds, bool) or not 1 <= seconds <= 30:
        raise CompileFailed("spec.webhookConfiguration.timeoutSeconds", "must be an integer from 1 to 30")
    return float(seconds)


@frozen_dataclass
class Variant:
    """The policy as it applies to one set of kinds: the original, or an autogen copy for pod controllers."""

    match: MatchResources
    conditions: Conditions
    variables: Variables
    body: Any  # the kind's compiled payload (validations, mutations, generators)
    autogen: str = ""  # "", "defaults", "cronjobs"


@dataclass(eq=False, frozen=True)
class CelPolicy:
    """The compiled-policy shape the engine dispatches to; kinds differ in `phases` and what they run.
    Frozen: the family builds each one complete, its route included (webhook.families.cel.plan); what
    changes afterwards are bounded caches of decisions that depend on the request alone."""

    id: PolicyId
    source: SourceRef
    phases: frozenset[Phase]
    failure_policy: FailurePolicy = FailurePolicy.FAIL
    error: str | None = None
    annotations: Mapping[str, str] = field(default_factory=dict)
    background: bool = True
    admission: bool = True
    timeout: float = DEFAULT_TIMEOUT
    variants: tuple[Variant, ...] = ()
    exceptions: tuple[Exception_, ...] = ()
    route: CelRoute = UNPLANNED  # how the request path evaluates it, and why (webhook.families.cel.route)
    shown: Mapping[str, Any] = field(default_factory=lambda: NOTHING_SHOWN)  # what its object's status shows once loaded (status.autogen)
    traits: PolicyTraits = field(default=PolicyTraits(), init=False, repr=False)
    # when every variant matches on the request's static_key alone: that key -> the variant (or None)
    _static: bool = field(default=False, init=False, repr=False)
    _by_key: dict[tuple[Any, ...], "Variant | None"] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        # derived once from the fields (frozen: set through object.__setattr__, as dataclasses do)
        object.__setattr__(self, "_static", all(v.match.static for v in self.variants))
        object.__setattr__(self, "traits", PolicyTraits(
            reinvoke=self._reinvokes(),
            excluded_when_unmatched=any(not v.match.plain for v in self.variants),
            route=self.route.route.value, why=self.route.why, shown=self.shown))

    def _reinvokes(self) -> bool:
        """reinvocationPolicy IfNeeded (the mutating kinds say)."""
        return False

    @property
    def name(self) -> str:
        return self.id.name

    @property
    def static_match(self) -> bool:
        """Whether which variant applies depends only on the request's `static_key` (and namespace)."""
        return self._static

    @property
    def kind(self) -> str:
        return self.id.kind

    def variant_for(self, request: AdmissionRequest, obj: Mapping[str, Any] | None, ctx: EvalContext) -> Variant | None:
        """Remembered for the request: the dispatcher asks matches(), then validate() asks again. A policy
        that matches on resource and operation alone remembers its answer for them (see `static_key`)."""
        if self._static:
            return self._static_variant(request, obj, ctx)
        cache = ctx.memo
        key = (_VARIANTS, id(self))
        found = cache.get(key)
        if found is not None and found[0] is request and found[1] is obj:
            return found[2]
        variant = self._variant_for(request, obj, ctx)
        cache[key] = (request, obj, variant)
        return variant

    def _static_variant(self, request: AdmissionRequest, obj: Mapping[str, Any] | None, ctx: EvalContext) -> Variant | None:
        if self.id.namespace and request.namespace != self.id.namespace:
            return None  # a namespaced policy sees only its own namespace
        key = request_key(request, ctx)
        try:
            return self._by_key[key]
        except KeyError:
            pass
        variant = next((v for v in self.variants if v.match.matches(request, obj, ctx.namespace)), None)
        if len(self._by_key) >= MAX_KEYS:  # requests name resources freely: keep it bounded
            self._by_key.clear()
        self._by_key[key] = variant
        return variant

    def _variant_for(self, request: AdmissionRequest, obj: Mapping[str, Any] | None, ctx: EvalContext) -> Variant | None:
        if self.id.namespace and request.namespace != self.id.namespace:
            return None  # a namespaced policy sees only its own namespace
        for variant in self.variants:
            if variant.match.matches(request, obj, ctx.namespace):
                return variant
        return None

    def matches(self, request: AdmissionRequest, obj: Mapping[str, Any] | None, ctx: EvalContext) -> bool:
        return self.admission and self.variant_for(request, obj, ctx) is not None

    def scope(self, request: AdmissionRequest, obj: Mapping[str, Any] | None, ctx: EvalContext,
              variant: Variant, extra: Mapping[str, Any] | None = None, share: bool = False) -> Scope:
        """`share`: the values are not changed during the request (validation), so the policies of one
        request can share one converted activation (see `shared_activation`)."""
        base = ctx.activation(obj) if ctx.request is not None else \
            admission_activation(request, request_variable(request), obj, ctx.namespace)
        base.update(extra or {})
        sharing = (lambda values: shared_activation(ctx, values)) if share and ctx.request is not None else None
        # a namespaced policy's resource.Get/List reach its own namespace only
        return Scope(base, variant.variables, bound_lookups(ctx.lookups, self.id.namespace), self.timeout, sharing)

    def check_exceptions(self, scope: Scope, request: AdmissionRequest) -> ExceptionOutcome:
        """Kyverno's order: a full exemption wins; partial ones (images, values) add to `exceptions`.
        An exception reaching one namespace exempts nothing elsewhere (exempts_in)."""
        exempt: list[Exception_] = []
        allowed: dict[str, list[str]] = {"allowedImages": [], "allowedValues": []}
        for exception in self.exceptions:
            if not exempts_in(exception.reach, request.namespace, request.kind.kind):
                continue
            if exception.expires_at is not None and time.time() > exception.expires_at:
                continue
            try:
                applies = exception.conditions.holds(scope, FailurePolicy.FAIL)
            except CelError:
                if exempt:
                    continue
                raise
            if not applies:
                continue
            if exception.full:
                exempt.append(exception)
            elif not exempt:
                allowed["allowedImages"].extend(exception.images)
                allowed["allowedValues"].extend(exception.allowed_values)
        if not exempt and not allowed["allowedImages"] and not allowed["allowedValues"]:
            return NO_EXCEPTIONS  # the same value for every policy: their activations can be shared
        return ExceptionOutcome(tuple(exempt), allowed)


def request_key(request: AdmissionRequest, ctx: EvalContext) -> tuple[Any, ...]:
    """The request's `static_key`, computed once per request."""
    found = ctx.memo.get(_KEY)
    if found is None or found[0] is not request:
        found = ctx.memo[_KEY] = (request, static_key(request))
    return found[1]


NO_EXCEPTIONS = ExceptionOutcome()
_ACTIVATIONS = "cel-family.activations"  # this family's entry in the request's EvalContext memo


def shared_activation(ctx: EvalContext, values: Mapping[str, Any]) -> Activation:
    """One converted activation per request for the same values (the same objects: request.object, the
    request variable, the namespace, the same `exceptions`/`params` values), whatever policy asks.

    It lives in the EvalContext's per-request `memo` (built by the dispatcher for each request and phase),
    under a key this family owns; the Activation keeps the values alive, so their ids stay theirs."""
    by_values = ctx.memo.setdefault(_ACTIVATIONS, {})
    key = tuple(sorted((name, id(value)) for name, value in values.items()))
    found = by_values.get(key)
    if found is None:
        found = by_values[key] = Activation(dict(values))
    return found


def exception_message(exempt: Sequence[Exception_]) -> tuple[bool, str]:
    """(report as pass?, message) for a policy skipped by exceptions, as Kyverno words it."""
    keys = ", ".join(e.key for e in exempt)
    as_pass = any(e.report_pass for e in exempt[:1])
    return as_pass, f"rule is {'passed' if as_pass else 'skipped'} due to policy exception: {keys}"
