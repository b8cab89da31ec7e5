"""The `DeviceClaimRewrite` mutator: legacy GPU limits in, DRA claims out (or a clear refusal).

A pod without mapped legacy keys is left alone and gets no result: that is also what makes the
rewrite idempotent, since a rewritten pod has no legacy keys left (reinvocationPolicy: IfNeeded).
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Mapping

from webhook.model.policy import EvalContext, FailurePolicy, MutationOutcome, Phase, PolicyId, SourceRef
from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Action, Outcome, RuleResult, failed, passed
from webhook.model.review import AdmissionRequest
from webhook.policy.common import MatchSpec
from webhook.platform.dra.choices import ChoiceOutcome, asked_for, resolve_choices
from webhook.platform.dra.config import RewriteConfig, RewriteStrategy
from webhook.platform.dra.legacy import LegacyError, LegacyUse, legacy_uses
from webhook.platform.dra.preclaimed import unclaimed
from webhook.platform.dra.rewrite import RewritePlan, plan_rewrite
from webhook.platform.base import Battery
from webhook.platform.dra.templates import KIND as TEMPLATE_KIND, same_template

RULE_REWRITE = "rewrite"
RULE_LEGACY = "legacy-resources"
RULE_CHOICE = "user-choice"
RULE_PASSTHROUGH = "passthrough"
RULE_TEMPLATE = "claim-template"
_NO_CHOICE = ChoiceOutcome()  # frozen: one for every pod that asks for nothing


def _legacy_text(uses: list[LegacyUse]) -> str:
    return "; ".join(f"{u.container.label}: " + ", ".join(f"{a.resource}={a.count}" for a in u.amounts) for u in uses)


@frozen_dataclass
class DeviceClaimRewrite(Battery):
    id: PolicyId
    source: SourceRef
    match: MatchSpec
    failure_policy: FailurePolicy
    action: Action
    config: RewriteConfig
    annotations: Mapping[str, str] = field(default_factory=dict)
    phases = frozenset({Phase.MUTATE})

    def _refuse(self, obj: dict[str, Any], rule: str, message: str) -> MutationOutcome:
        return MutationOutcome(obj, (failed(self.id, rule, message, self.action),))

    async def mutate(self, request: AdmissionRequest, obj: dict[str, Any], ctx: EvalContext) -> MutationOutcome:
        try:
            uses = legacy_uses(obj, self.config)
        except LegacyError as exc:
            return self._refuse(obj, RULE_LEGACY, str(exc))
        if not uses:
            return MutationOutcome(obj)
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if self.config.strategy is RewriteStrategy.PASSTHROUGH:
            return self._passthrough(obj, uses, annotations)
        choice = _NO_CHOICE
        if asked_for(annotations, self.config.choices) and any(u.devices for u in uses):
            choice = self._choose(uses, annotations)
            if choice.error:
                return self._refuse(obj, RULE_CHOICE, choice.error)
        namespace = request.namespace or str((obj.get("metadata") or {}).get("namespace", ""))
        # a template name a stored pod references before the template exists is not handed out (preclaimed.py)
        plan = unclaimed(plan_rewrite(obj, namespace, uses, self.config, choice.selectors), ctx.state, namespace)
        conflict = self._conflict(plan, ctx)
        if conflict:
            return self._refuse(obj, RULE_TEMPLATE, conflict)
        summary = plan.summary() + (f" (asked for {', '.join(choice.asked)})" if choice.asked else "")
        if self.action is Action.AUDIT:
            # report and warn, change nothing: the pod keeps its legacy limits
            note = RuleResult(self.id, RULE_REWRITE, Outcome.WARN, f"audit mode, would rewrite {summary}", Action.AUDIT)
            return MutationOutcome(obj, (note,))
        return MutationOutcome(plan.pod, (passed(self.id, RULE_REWRITE, f"rewrote {summary}"),), creates=plan.templates)

    def _choose(self, uses: list[LegacyUse], annotations: Mapping[str, str]) -> ChoiceOutcome:
        choice = resolve_choices(annotations, self.config.choices)
        if choice.error or any(self._accepts_choices(a.resource) for u in uses for a in u.amounts if a.count):
            return choice
        offered = ", ".join(d.resource_name or d.resource_prefix + "*" for d in self.config.devices if d.user_choices)
        return ChoiceOutcome(error=f"{', '.join(asked_for(annotations, self.config.choices))}: the GPU choice applies "
                                   f"to {offered or 'no resource here'}; this pod asks for {_legacy_text(uses)}, which "
                                   f"already names its device, so remove the annotation")

    def _accepts_choices(self, resource: str) -> bool:
        found = self.config.mapping_for(resource)
        return found is not None and found[0].user_choices

    def _passthrough(self, obj: dict[str, Any], uses: list[LegacyUse], annotations: Mapping[str, str]) -> MutationOutcome:
        asked = asked_for(annotations, self.config.choices)
        if asked:
            return self._refuse(obj, RULE_CHOICE, f"{', '.join(asked)}: GPUs are assigned by the DeviceClass here "
                                                  f"(passthrough), so a model or memory cannot be chosen; remove it")
        message = f"passthrough, left for the DeviceClass extendedResourceName: {_legacy_text(uses)}"
        return MutationOutcome(obj, (passed(self.id, RULE_PASSTHROUGH, message),))

    def _conflict(self, plan: RewritePlan, ctx: EvalContext) -> str:
        for template in plan.templates:
            meta = template["metadata"]
            existing = ctx.state.get(TEMPLATE_KIND, meta["namespace"], meta["name"])
            if existing is not None and not same_template(existing, template):
                return (f"ResourceClaimTemplate {meta['namespace']}/{meta['name']} exists with a different spec "
                        f"(Quartermaster names templates by their content, so it was changed by hand); "
                        f"ask the platform team to delete it")
        return ""
