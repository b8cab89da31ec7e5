"""From rule results to a verdict: what blocks, what warns, what becomes an audit annotation."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from webhook.model.results import RuleResult
from webhook.model.review import AdmissionRequest
from webhook.model.kubetext import annotation_key, clean_warning
from webhook.model.verdict import Verdict
from webhook.reports.sink import ResourceRef


# the reasons a ValidatingAdmissionPolicy validation may give, with the HTTP code Kubernetes answers with
STATUS_CODES = {"Forbidden": 403, "Unauthorized": 401, "Invalid": 422, "RequestEntityTooLarge": 413}


def verdict_of(results: tuple[RuleResult, ...], warnings: Iterable[str] = ()) -> Verdict:
    """Messages name policies as users know them (their name); reports and metrics keep the full identity."""
    blocking: list[RuleResult] = []
    texts = [clean_warning(w) for w in warnings]
    annotations: dict[str, str] = {}
    audited: list[RuleResult] = []
    for r in results:  # one pass: a score of results come back with every admission, most of them passes
        if r.blocks:
            blocking.append(r)
        if r.reported:
            if not r.quiet:
                texts.append(r.warning_text)
            annotations[r.annotation_key] = r.message
        if r.audit:
            audited.append(r)
    for r in audited:  # after every reported result's annotation, as ever: a policy's own key wins
        for key, value in r.audit:
            annotations[annotation_key(r.policy.qualified_name, key)] = value
    verdict = Verdict(True, warnings=tuple(dict.fromkeys(texts)), audit_annotations=annotations, results=results)
    if blocking:
        # policies without rules (ValidatingPolicy...) report an empty rule name: show the policy alone
        message = "; ".join(f"[{r.policy.qualified_name}{'/' + r.rule if r.rule else ''}] {r.message}" for r in blocking)
        reason = next((r.reason for r in blocking if r.reason), "Forbidden")
        return replace(verdict, allowed=False, code=STATUS_CODES.get(reason, 403), reason=reason, message=message)
    return verdict


def report_ref(request: AdmissionRequest) -> ResourceRef:
    meta = request.subject.get("metadata") or {}
    return ResourceRef(request.kind.api_version, request.kind.kind, request.namespace,
                       request.name or meta.get("name", ""), str(meta.get("uid", "")))
