"""Admission without an API server: the one offline path of `apply`, `report`, `test` and the case tests.

A resource goes through the same engine as a review would: mutate, then validate the mutated object.
Admitted objects are recorded in the engine's state (unless dryRun), so later resources of the same
run see them, and generated objects are created there, as the API server would have them.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any, Callable, Mapping

from webhook.engine.dispatch import AdmissionEngine
from webhook.model.apiresources import lookup as api_resource
from webhook.model.cluster import CLUSTER_SCOPED
from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import RuleResult
from webhook.model.review import AdmissionRequest, GroupVersionKind, UserInfo

OFFLINE_USER = UserInfo("quartermaster-apply", ("system:authenticated",))


@frozen_dataclass
class OfflineResult:
    request: AdmissionRequest  # the review as the mutate phase saw it
    allowed: bool
    message: str  # why not, when denied
    results: tuple[RuleResult, ...]  # mutate phase, then validate phase
    object: Mapping[str, Any] | None  # the object as admitted (mutated); the original when denied
    created: tuple[Mapping[str, Any], ...] = ()  # what the mutate phase needed created (claim templates)
    generated: tuple[Mapping[str, Any], ...] = ()  # what validating policies generate after admission
    warnings: tuple[str, ...] = ()
    patch: tuple[Mapping[str, Any], ...] = ()  # the mutate phase's JSON Patch, as /mutate would send it
    code: int = 200  # the HTTP-like status of a denial: 403, or 503 when a needed object could not be created


def plural(kind: str) -> str:
    """The resource name kubectl would use for a kind, good enough where no discovery is at hand."""
    lower = kind.lower()
    if lower.endswith("y") and not lower.endswith(("ay", "ey", "oy", "uy")):
        return lower[:-1] + "ies"
    return lower + ("es" if lower.endswith(("s", "x", "ch", "sh")) else "s")


def offline_request(resource: Mapping[str, Any] | None, *, operation: str = "CREATE", old: Mapping[str, Any] | None = None,
                    user: UserInfo = OFFLINE_USER, dry_run: bool = False) -> AdmissionRequest:
    subject = resource if resource is not None else (old or {})
    group, _, version = str(subject.get("apiVersion", "v1")).rpartition("/")
    kind = str(subject.get("kind", ""))
    meta = subject.get("metadata") or {}
    known = api_resource(str(subject.get("apiVersion", "v1")), kind)
    namespace = "" if kind in CLUSTER_SCOPED or not known.namespaced else str(meta.get("namespace") or "default")
    options_kind = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}.get(operation)
    return AdmissionRequest(
        uid=str(uuid.uuid4()), kind=GroupVersionKind(group, version, kind), resource=known.resource, sub_resource="",
        namespace=namespace, name=str(meta.get("name", "")), operation=operation, object=resource, old_object=old,
        dry_run=dry_run, user=user,
        options={"apiVersion": "meta.k8s.io/v1", "kind": options_kind} if options_kind else None)


async def admit_offline(engine: AdmissionEngine, resource: Mapping[str, Any] | None, *, operation: str = "CREATE",
                        old: Mapping[str, Any] | None = None, user: UserInfo = OFFLINE_USER,
                        dry_run: bool = False, background: bool = False,
                        as_sent: Callable[[AdmissionRequest], AdmissionRequest] | None = None) -> OfflineResult:
    """Mutate, then validate the mutated object; `resource` None is a DELETE of `old`.

    `background`: an existing object checked by a background scan: no mutation, only the policies that
    take part in background scans, nothing recorded or created (pass dry_run=True as well).
    `as_sent`: the request as the API server would send it (a Kyverno values file's subresources).
    """
    request = offline_request(resource, operation=operation, old=old, user=user, dry_run=dry_run)
    if as_sent is not None:
        request = as_sent(request)
    if background:
        verdict = await engine.validate(request, background=True)
        return OfflineResult(request, verdict.allowed, verdict.message, verdict.results, resource,
                             warnings=verdict.warnings, code=verdict.code)
    mutated = await engine.mutate(request)
    results = tuple(mutated.verdict.results)
    if not mutated.verdict.allowed:
        return OfflineResult(request, False, mutated.verdict.message, results, resource,
                             warnings=mutated.verdict.warnings, code=mutated.verdict.code)
    final = dict(mutated.object) if mutated.object is not None else None
    verdict = await engine.validate(replace(request, object=final), offline=True)
    results += verdict.results
    warnings = tuple(dict.fromkeys(mutated.verdict.warnings + verdict.warnings))
    if not verdict.allowed:
        return OfflineResult(request, False, verdict.message, results, resource, warnings=warnings,
                             patch=mutated.verdict.patch, code=verdict.code)
    return OfflineResult(request, True, "", results, final, tuple(mutated.created), tuple(verdict.generated), warnings,
                         mutated.verdict.patch)
