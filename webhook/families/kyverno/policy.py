"""A compiled Kyverno policy as the engine sees it (webhook.model.policy.CompiledPolicy)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Mapping

from webhook.model.policy import (EvalContext, FailurePolicy, MutationOutcome, Phase, PolicyTraits, SourceRef,
                                  ValidationOutcome)
from webhook.model.policy_scope import bound_lookups
from webhook.model.results import Action, PolicyId, RuleResult, errored, failed, passed, skipped, warned
from webhook.model.review import AdmissionRequest
from webhook.policy.documents import Document

from .compile import KyvernoPolicy, effective_action
from .context import RequestData, Subject, base_document
from .engine import RuleOutcome, generate_rules, mutate_rules, request_info, validate_rules
from .exceptions import PolicyException
from .match import rule_applies
from .offload import beside_the_loop, large
from .outcome import RuleEnv
from .rbac import roles_of
from .variables import Context


_SHARED_DATA = object()  # EvalContext.memo key: (request, object, RequestData) the admission's policies share


@dataclass(eq=False)
class KyvernoCompiledPolicy:
    id: PolicyId
    source: SourceRef
    phases: frozenset[Phase]
    failure_policy: FailurePolicy
    annotations: Mapping[str, str]
    background: bool
    compiled: KyvernoPolicy
    exceptions: tuple[PolicyException, ...] = ()
    overrides: tuple[Mapping[str, Any], ...] = ()      # spec.validationFailureActionOverrides
    uses_roles: bool = False
    error: str | None = None
    cel: Any = field(default=None, repr=False)
    kinds: frozenset[str] = frozenset({"*"})    # bare kinds any rule names ("*": some rule uses a wildcard)
    has_foreach: bool = False  # a validate or mutate foreach: evaluated beside the event loop on large objects
    _last: Any = field(default=None, repr=False, compare=False)
    # mutate() never edits the object it is handed (the strategic merge copies on write, JSON patches copy):
    # the engine need not copy it first
    traits: ClassVar[PolicyTraits] = PolicyTraits(copies_input=True, why="a Kyverno policy, rule by rule")

    @property
    def _exception_key(self) -> str:
        """How a PolicyException names this policy (Kyverno's key: namespace/name for a Policy)."""
        return f"{self.compiled.namespace}/{self.compiled.name}" if self.compiled.namespace else self.compiled.name

    @property
    def _rule_kinds(self) -> frozenset[str]:
        return frozenset(rule.kind for rule in self.compiled.rules)

    @classmethod
    def of(cls, compiled: KyvernoPolicy, doc: Document, exceptions: tuple[PolicyException, ...]) -> "KyvernoCompiledPolicy":
        kinds = {r.kind for r in compiled.rules}
        phases = frozenset(([Phase.MUTATE] if "mutate" in kinds else []) +
                           ([Phase.VALIDATE] if kinds & {"validate", "generate"} else []))
        spec = doc.data.get("spec") or {}
        text = str(spec.get("rules"))
        return cls(
            id=PolicyId(compiled.api_version, compiled.kind, compiled.name, compiled.namespace),
            source=SourceRef(doc.file, doc.index), phases=phases or frozenset({Phase.VALIDATE}),
            failure_policy=FailurePolicy(compiled.failure_policy), annotations=compiled.annotations,
            background=compiled.background, compiled=compiled, exceptions=exceptions,
            overrides=tuple(spec.get("validationFailureActionOverrides") or ()),
            uses_roles="'roles'" in text or "'clusterRoles'" in text, kinds=_bare_kinds(compiled),
            has_foreach=any(isinstance(rule.raw.get(rule.kind), dict) and bool(rule.raw[rule.kind].get("foreach"))
                            for rule in compiled.rules))

    # -- matching -----------------------------------------------------------------------------------------
    def _request_data(self, request: AdmissionRequest, obj: Any, ctx: EvalContext) -> tuple[RequestData, RuleEnv]:
        """Built once per (request, object, context): the dispatcher asks matches() and then validate()."""
        last = self._last
        if last is not None and last[0] is request and last[1] is obj and last[2] is ctx:
            return last[3]
        built = self._build_request_data(request, obj, ctx)
        self._last = (request, obj, ctx, built)
        return built

    def _build_request_data(self, request: AdmissionRequest, obj: Any, ctx: EvalContext) -> tuple[RequestData, RuleEnv]:
        values = dict(self._values(ctx, request, ""))
        shared = not values and not self.uses_roles  # (admission always; a test that sets no values)
        found = ctx.memo.get(_SHARED_DATA) if shared else None
        if found is not None and found[0] is request and found[1] is obj:
            data = found[2]  # what another policy of this admission built: the same for every policy
        else:
            data = self._request_data_of(request, obj, ctx, values)
            if shared:
                ctx.memo[_SHARED_DATA] = (request, obj, data)
        rule_values = (lambda rule: self._values(ctx, request, rule)) if hasattr(ctx.lookups, "values_for") else None
        foreach_for = getattr(ctx.lookups, "foreach_values_for", None)
        rule_foreach = (lambda rule: foreach_for(self.compiled.name, rule)) if foreach_for else None
        # a namespaced Policy reads (configMap, apiCall, clone sources) and generates in its own namespace only
        home = self.compiled.namespace
        env = RuleEnv(lookups=bound_lookups(ctx.lookups, home), overrides=values, cel=self.cel,
                      namespace_object=ctx.namespace, rule_values=rule_values, rule_foreach_values=rule_foreach,
                      deadline=ctx.deadline, policy_namespace=home)
        return data, env

    def _request_data_of(self, request: AdmissionRequest, obj: Any, ctx: EvalContext,
                         values: dict[str, Any]) -> RequestData:
        operation = str(values.pop("request.operation", "") or request.operation).upper()
        user = request.user
        roles, cluster_roles = self._roles(request, ctx) if self.uses_roles else ((), ())
        kind = request.kind
        return RequestData(
            operation=operation, object=None if operation == "DELETE" else obj,
            # a test that only says "request.operation: UPDATE" compares the resource with itself, as kyverno test does
            old_object=request.old_object or (obj if operation in ("UPDATE", "DELETE") else None),
            subject=Subject(user.username, tuple(user.groups), roles, cluster_roles, user.uid, user.extra),
            kind={"group": kind.group, "version": kind.version, "kind": kind.kind}, namespace=request.namespace,
            name=request.name, subresource=request.sub_resource, dry_run=request.dry_run, overrides=values)

    def _roles(self, request: AdmissionRequest, ctx: EvalContext) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """A test's userinfo names the roles outright; otherwise they come from the RBAC bindings in the state."""
        given = getattr(ctx.lookups, "request_info", None)
        if given and (given.get("roles") or given.get("clusterRoles")):
            return tuple(given.get("roles") or ()), tuple(given.get("clusterRoles") or ())
        return roles_of(request.user.username, tuple(request.user.groups), request.namespace, ctx.lookups)

    def _values(self, ctx: EvalContext, request: AdmissionRequest, rule: str) -> Mapping[str, Any]:
        values_for = getattr(ctx.lookups, "values_for", None)
        if values_for is None:
            return {}
        if not rule:
            return values_for(self.compiled.name, request.name)
        # values written for rule X also hold for autogen-X and autogen-cronjob-X, as in the Kyverno CLI
        base = rule.removeprefix("autogen-cronjob-") if rule.startswith("autogen-cronjob-") else rule.removeprefix(
            "autogen-")
        try:
            values = dict(values_for(self.compiled.name, request.name, base))
            if base != rule:
                values.update(values_for(self.compiled.name, request.name, rule))
            return values
        except TypeError:  # a test source without rule values
            return values_for(self.compiled.name, request.name)

    def matches(self, request: AdmissionRequest, obj: Mapping[str, Any] | None, ctx: EvalContext) -> bool:
        if not self.compiled.admission and not _background_scan(request):
            return False  # spec.admission: false runs in background scans only
        if self.compiled.namespace and request.namespace != self.compiled.namespace:
            return False
        if "*" not in self.kinds and request.kind.kind not in self.kinds:
            return False  # cheap first: no rule names this kind
        data, env = self._request_data(request, obj if obj is not None else request.object, ctx)
        info = request_info(data, env)
        return any(rule_applies(rule.raw, info) for rule in self.compiled.rules)

    # -- phases -------------------------------------------------------------------------------------------
    async def mutate(self, request: AdmissionRequest, obj: dict[str, Any], ctx: EvalContext) -> MutationOutcome:
        if self.has_foreach and large(obj, ctx.memo):
            return await beside_the_loop(self._mutate, request, obj, ctx)
        return self._mutate(request, obj, ctx)

    async def validate(self, request: AdmissionRequest, obj: Mapping[str, Any], ctx: EvalContext) -> ValidationOutcome:
        if self.has_foreach and large(obj, ctx.memo):
            return await beside_the_loop(self._validate, request, obj, ctx)
        return self._validate(request, obj, ctx)

    def _mutate(self, request: AdmissionRequest, obj: dict[str, Any], ctx: EvalContext) -> MutationOutcome:
        data, env = self._request_data(request, obj, ctx)
        result = mutate_rules(self.compiled.rules, data, env, self.compiled.apply_one)
        outcomes = self._excepted(result.outcomes, data, env)
        return MutationOutcome(object=result.resource, results=tuple(self._result(o, data, env) for o in outcomes))

    def _validate(self, request: AdmissionRequest, obj: Mapping[str, Any], ctx: EvalContext) -> ValidationOutcome:
        data, env = self._request_data(request, obj, ctx)
        outcomes = validate_rules(self.compiled.rules, data, env, self.compiled.apply_one)
        generated = generate_rules(self.compiled.rules, data, env) if "generate" in self._rule_kinds else []
        outcomes = self._excepted(outcomes + generated, data, env)
        objects = tuple(self._label(g, o.rule) for o in outcomes if o.kind == "generate" and o.status == "pass"
                        for g in o.generated)
        return ValidationOutcome(results=tuple(self._result(o, data, env) for o in outcomes), generates=objects)

    def _excepted(self, outcomes: list[RuleOutcome], data: RequestData, env: RuleEnv) -> list[RuleOutcome]:
        if not self.exceptions:
            return outcomes
        info = request_info(data, env)
        ctx = Context(base_document(data), delete=data.operation == "DELETE")
        out = []
        for outcome in outcomes:
            found = next((e for e in self.exceptions if e.covers(self._exception_key, outcome.rule)
                          and e.applies(info, ctx)), None)
            if found is not None:
                outcome = RuleOutcome(outcome.rule, outcome.kind, "skip",
                                      f"rule is skipped due to policy exception {found.namespace + '/' if found.namespace else ''}{found.name}")
            out.append(outcome)
        return out

    def _action(self, outcome: RuleOutcome, data: RequestData, env: RuleEnv | None) -> Action:
        rule = next((r for r in self.compiled.rules if r.name == outcome.rule), None)
        if rule is None:
            return Action.ENFORCE if outcome.action == "Enforce" else Action.AUDIT
        labels = ((env.namespace_object or {}).get("metadata") or {}).get("labels") if env else None
        action = effective_action(rule, self.compiled.action, self.overrides, data.namespace, labels)
        return Action.ENFORCE if action == "Enforce" else Action.AUDIT

    def _result(self, outcome: RuleOutcome, data: RequestData, env: RuleEnv | None = None) -> RuleResult:
        result = self._plain_result(outcome, data, env)
        rule = next((r for r in self.compiled.rules if r.name == outcome.rule), None)
        properties = (rule.raw.get("reportProperties") or {}) if rule is not None else {}
        if not properties:
            return result
        return replace(result, properties=tuple((str(k), str(v)) for k, v in properties.items()))

    def _plain_result(self, outcome: RuleOutcome, data: RequestData, env: RuleEnv | None) -> RuleResult:
        if outcome.status == "pass":
            return passed(self.id, outcome.rule, outcome.message)
        if outcome.status == "skip":
            return skipped(self.id, outcome.rule, outcome.message)
        if outcome.status == "warn":
            return warned(self.id, outcome.rule, outcome.message)
        action = self._action(outcome, data, env) if outcome.kind == "validate" else Action.ENFORCE
        if outcome.status == "fail":
            if self.annotations.get("policies.kyverno.io/scored") == "false":
                return warned(self.id, outcome.rule, outcome.message)  # Kyverno reports unscored failures as warn
            return failed(self.id, outcome.rule, outcome.message, action)
        return errored(self.id, outcome.rule, outcome.message,
                       action if self.failure_policy is FailurePolicy.FAIL else Action.AUDIT)

    def _label(self, obj: Mapping[str, Any], rule: str) -> Mapping[str, Any]:
        """Kyverno's ownership labels on what a rule generates."""
        out = dict(obj)
        meta = dict(out.get("metadata") or {})
        meta["labels"] = {**(meta.get("labels") or {}), "app.kubernetes.io/managed-by": "kyverno",
                          "generate.kyverno.io/policy-name": self.compiled.name,
                          "generate.kyverno.io/rule-name": rule}
        out["metadata"] = meta
        return out


def _bare_kinds(compiled: KyvernoPolicy) -> frozenset[str]:
    """Every kind the rules (autogen included) match, without group/version/subresource."""
    from .match import parse_kind_selector
    kinds = set()
    for rule in compiled.rules:
        match = rule.raw.get("match") or {}
        filters = (match.get("any") or []) + (match.get("all") or []) + [match]
        for entry in filters:
            for kind in (entry.get("resources") or {}).get("kinds") or []:
                bare = parse_kind_selector(str(kind))[2]
                kinds.add("*" if "*" in bare or "?" in bare else bare)
    return frozenset(kinds) or frozenset({"*"})


def _background_scan(request: AdmissionRequest) -> bool:
    """The engine's background scan admits existing objects as a dry run under its own service account
    (webhook.engine.scan.SCAN_USER); families may not import the engine, so the identity is matched here."""
    return request.dry_run and request.user.username.endswith(":background-scan")
