"""A compiled Kyverno policy as the engine sees it (webhook.model.policy.CompiledPolicy)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping

from webhook.model.policy import (EvalContext, FailurePolicy, MutationOutcome, Phase, PolicyTraits, SourceRef,
                                  ValidationOutcome)
from webhook.model.lookups import SuppliedValues
from webhook.model.policy_scope import bound_lookups
from webhook.model.results import Action, Outcome, PolicyId, RuleResult, errored, failed, warned
from webhook.model.review import AdmissionRequest
from webhook.policy.documents import Document

from .compile import KyvernoPolicy, TypedRule, effective_action
from .context import RequestData, RequestSubject, base_document
from .engine import generate_rules, mutate_rules, request_info, validate_rules
from .exceptions import PolicyException
from .match import parse_kind_selector
from .offload import beside_the_loop, large
from .rbac import roles_of
from .rule_env import RuleEnv
from .podsecurity import PodSecurityCheck
from .rule_types import ValidateRule
from .variables import JsonContext


_SHARED_DATA = object()  # EvalContext.memo key: (request, object, RequestData) the admission's policies share
# mutate() never edits the object it is handed (the strategic merge copies on write, JSON patches copy): the
# engine need not copy it first
KYVERNO_TRAITS = PolicyTraits(copies_input=True, why="a Kyverno policy, rule by rule")


def _as_kyverno_writes(rule: Mapping[str, Any]) -> dict[str, Any]:
    """A rule as Kyverno's Go types write it back: `match.resources` is a struct, never left out (`{}`)."""
    match = rule.get("match")
    if isinstance(match, Mapping) and "resources" not in match:
        return {**rule, "match": {**match, "resources": {}}}
    return dict(rule)


def _traits(compiled: KyvernoPolicy) -> PolicyTraits:
    """Its object's status shows the rules autogen made, as Kyverno's does: `autogen: {}` when none (merged into
    the status, None removes the rules an earlier generation showed)."""
    rules = [_as_kyverno_writes(rule) for rule in compiled.autogen]
    shown = {"autogen": {"rules": rules or None}}
    return replace(KYVERNO_TRAITS, shown=MappingProxyType(shown))


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
    kinds: frozenset[str] = frozenset({"*"})    # bare kinds any rule names ("*": some rule uses a wildcard)
    has_foreach: bool = False  # a validate or mutate foreach: evaluated beside the event loop on large objects
    rules_by_name: Mapping[str, TypedRule] = field(default_factory=dict, repr=False)
    traits: PolicyTraits = KYVERNO_TRAITS

    @property
    def _exception_key(self) -> str:
        """How a PolicyException names this policy (Kyverno's key: namespace/name for a Policy)."""
        return f"{self.compiled.namespace}/{self.compiled.name}" if self.compiled.namespace else self.compiled.name

    @classmethod
    def of(cls, compiled: KyvernoPolicy, doc: Document, exceptions: tuple[PolicyException, ...]) -> "KyvernoCompiledPolicy":
        phases = frozenset(([Phase.MUTATE] if compiled.mutate_rules else []) +
                           ([Phase.VALIDATE] if compiled.validate_rules or compiled.generate_rules else []))
        spec = doc.data.get("spec") or {}
        text = str(spec.get("rules"))
        return cls(
            id=compiled.id, source=SourceRef(doc.file, doc.index), phases=phases or frozenset({Phase.VALIDATE}),
            failure_policy=FailurePolicy(compiled.failure_policy), annotations=compiled.annotations,
            background=compiled.background, compiled=compiled, exceptions=exceptions,
            overrides=tuple(spec.get("validationFailureActionOverrides") or ()),
            uses_roles="'roles'" in text or "'clusterRoles'" in text, kinds=_bare_kinds(compiled),
            has_foreach=any(rule.head.foreach for rule in compiled.rules),
            rules_by_name={rule.head.name: rule for rule in compiled.rules}, traits=_traits(compiled))

    # -- matching -----------------------------------------------------------------------------------------
    def _request_data(self, request: AdmissionRequest, obj: Any, ctx: EvalContext) -> tuple[RequestData, RuleEnv]:
        """Built once per (request, object) of a context: the dispatcher asks matches() and then validate(). Kept
        in the request's memo under this policy, never on the policy (worker threads run other requests)."""
        last = ctx.memo.get(self)
        if last is not None and last[0] is request and last[1] is obj:
            return last[2]  # type: ignore[no-any-return]
        built = self._build_request_data(request, obj, ctx)
        ctx.memo[self] = (request, obj, built)
        return built

    def _build_request_data(self, request: AdmissionRequest, obj: Any, ctx: EvalContext) -> tuple[RequestData, RuleEnv]:
        supplied = ctx.lookups.supplied
        values = dict(self._values(supplied, request, "")) if supplied is not None else {}
        shared = not values and not self.uses_roles  # (admission always; a test that sets no values)
        found = ctx.memo.get(_SHARED_DATA) if shared else None
        if found is not None and found[0] is request and found[1] is obj:
            data = found[2]  # what another policy of this admission built: the same for every policy
        else:
            data = self._request_data_of(request, obj, ctx, values)
            if shared:
                ctx.memo[_SHARED_DATA] = (request, obj, data)
        if supplied is not None:
            rule_values: Callable[[str], Mapping[str, Any]] | None = (
                lambda rule: self._values(supplied, request, rule))
            rule_foreach: Callable[[str], Mapping[str, list[Any]]] | None = (
                lambda rule: supplied.foreach_values_for(self.compiled.name, rule))
        else:
            rule_values = rule_foreach = None
        # a namespaced Policy reads (configMap, apiCall, clone sources) and generates in its own namespace only
        home = self.compiled.namespace
        env = RuleEnv(lookups=bound_lookups(ctx.lookups, home), overrides=values,
                      namespace_object=ctx.namespace, rule_values=rule_values, rule_foreach_values=rule_foreach,
                      deadline=ctx.deadline, policy_namespace=home, memo=ctx.memo)
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
            subject=RequestSubject(user.username, tuple(user.groups), roles, cluster_roles, user.uid, user.extra),
            kind={"group": kind.group, "version": kind.version, "kind": kind.kind}, namespace=request.namespace,
            name=request.name, subresource=request.sub_resource, dry_run=request.dry_run, overrides=values)

    def _roles(self, request: AdmissionRequest, ctx: EvalContext) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """A test's userinfo names the roles outright; otherwise they come from the RBAC bindings in the state."""
        supplied = ctx.lookups.supplied
        given = supplied.request_info if supplied is not None else None
        if given and (given.get("roles") or given.get("clusterRoles")):
            return tuple(given.get("roles") or ()), tuple(given.get("clusterRoles") or ())
        return roles_of(request.user.username, tuple(request.user.groups), request.namespace, ctx.lookups)

    def _values(self, supplied: SuppliedValues, request: AdmissionRequest, rule: str) -> Mapping[str, Any]:
        if not rule:
            return supplied.values_for(self.compiled.name, request.name)
        # values written for rule X also hold for autogen-X and autogen-cronjob-X, as in the Kyverno CLI
        base = rule.removeprefix("autogen-cronjob-") if rule.startswith("autogen-cronjob-") else rule.removeprefix(
            "autogen-")
        values = dict(supplied.values_for(self.compiled.name, request.name, base))
        if base != rule:
            values.update(supplied.values_for(self.compiled.name, request.name, rule))
        return values

    def matches(self, request: AdmissionRequest, obj: Mapping[str, Any] | None, ctx: EvalContext) -> bool:
        if not self.compiled.admission and not _background_scan(request):
            return False  # spec.admission: false runs in background scans only
        if self.compiled.namespace and request.namespace != self.compiled.namespace:
            return False
        if "*" not in self.kinds and request.kind.kind not in self.kinds:
            return False  # cheap first: no rule names this kind
        data, env = self._request_data(request, obj if obj is not None else request.object, ctx)
        info = request_info(data, env)
        return any(rule.head.selector.applies(info) for rule in self.compiled.rules)

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
        lifted = (lambda rule: self._exception(rule, data, env) is not None) if self.exceptions else None
        done = mutate_rules(self.compiled.mutate_rules, data, env, self.compiled.apply_one, lifted)
        results = self._excepted(done.results, data, env)
        return MutationOutcome(object=done.resource, results=tuple(self._finish(r, data, env) for r in results))

    def _validate(self, request: AdmissionRequest, obj: Mapping[str, Any], ctx: EvalContext) -> ValidationOutcome:
        data, env = self._request_data(request, obj, ctx)
        results = self._excepted(validate_rules(self.compiled.validate_rules, data, env, self.compiled.apply_one),
                                 data, env)
        objects: list[Mapping[str, Any]] = []
        if self.compiled.generate_rules:
            made = generate_rules(self.compiled.generate_rules, data, env)
            generated = self._excepted([m.result for m in made], data, env)
            objects = [self._label(o, m.result.rule) for m, result in zip(made, generated)
                       if result.outcome is Outcome.PASS for o in m.objects]
            results = results + generated
        return ValidationOutcome(results=tuple(self._finish(r, data, env) for r in results), generates=tuple(objects))

    def _excepted(self, results: Iterable[RuleResult], data: RequestData, env: RuleEnv) -> list[RuleResult]:
        """Results of rules a PolicyException lifts off this request become skips; exceptions that exempt Pod
        Security controls only lift a podSecurity rule's failure when the controls they name were all it failed,
        as Kyverno's validatePssHandler does."""
        if not self.exceptions:
            return list(results)
        out = []
        for result in results:
            found = self._exceptions(result.rule, data, env)
            whole = next((e for e in found if not e.pod_security), None)
            if whole is not None:
                result = RuleResult(self.id, result.rule, Outcome.SKIP, f"rule is skipped due to policy exception "
                                                                        f"{whole.key}")
            elif found and result.outcome is Outcome.FAIL:
                result = self._with_controls_exempted(result, found, data)
            out.append(result)
        return out

    def _with_controls_exempted(self, result: RuleResult, found: list[PolicyException],
                                data: RequestData) -> RuleResult:
        rule = self.rules_by_name.get(result.rule)
        if not isinstance(rule, ValidateRule) or not isinstance(rule.handler, PodSecurityCheck) or data.object is None:
            return result
        widened = replace(rule.handler, exclude=rule.handler.exclude + tuple(x for e in found for x in e.pod_security))
        left = widened.violations(data.object)
        if left:
            return replace(result, message=widened.failure_message(result.rule, left))
        return RuleResult(self.id, result.rule, Outcome.SKIP,
                          f"rule is skipped due to policy exceptions {', '.join(e.key for e in found)}")

    def _exceptions(self, rule: str, data: RequestData, env: RuleEnv) -> list[PolicyException]:
        """The PolicyExceptions that name `rule` and match this request."""
        info = request_info(data, env)
        ctx = JsonContext(base_document(data, memo=env.memo), delete=data.operation == "DELETE")
        return [e for e in self.exceptions if e.covers(self._exception_key, rule) and e.applies(info, ctx)]

    def _exception(self, rule: str, data: RequestData, env: RuleEnv) -> PolicyException | None:
        """The PolicyException that lifts `rule` off this request whole, if one does."""
        return next((e for e in self._exceptions(rule, data, env) if not e.pod_security), None)

    def _action(self, rule: TypedRule, data: RequestData, env: RuleEnv) -> Action:
        """A failing validate rule's action for this request; other rules' failures always count."""
        if not isinstance(rule, ValidateRule):
            return Action.ENFORCE
        labels = ((env.namespace_object or {}).get("metadata") or {}).get("labels")
        return effective_action(rule, self.compiled.action, self.overrides, data.namespace, labels)

    def _finish(self, result: RuleResult, data: RequestData, env: RuleEnv) -> RuleResult:
        """What a rule's result means under this policy: its action, scoring, failure policy, report properties."""
        rule = self.rules_by_name[result.rule]
        if result.outcome is Outcome.FAIL:
            if self.annotations.get("policies.kyverno.io/scored") == "false":
                result = warned(self.id, result.rule, result.message)  # Kyverno reports unscored failures as warn
            else:
                result = failed(self.id, result.rule, result.message, self._action(rule, data, env))
        elif result.outcome is Outcome.ERROR:
            action = self._action(rule, data, env) if self.failure_policy is FailurePolicy.FAIL else Action.AUDIT
            result = errored(self.id, result.rule, result.message, action)
        if not rule.head.properties:
            return result
        return replace(result, properties=rule.head.properties)

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
    kinds = set()
    for rule in compiled.rules:
        match = rule.head.selector.match or {}
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
