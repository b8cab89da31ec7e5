"""Claim-template names no one can take in advance.

Templates are named by their content (templates.py), so their names are predictable: a tenant can create a
pod that references `quartermaster-gpu-<hash>` before the template exists. That pod is charged nothing for
it (the quota cannot count a template it does not see), and the rewrite of the next GPU pod then creates the
template, and the first pod would get its GPUs without a quota check. So a template the rewrite is about to
create, that does not exist yet but that a stored pod already references, gets a fresh, random name instead:
only the pod being rewritten uses it. A template that exists is shared as before; a pod that references an
existing template is charged for it when it is created.
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from typing import Any, Mapping

from webhook.model.cluster import POD, ClusterState
from webhook.platform.base import is_mapping
from webhook.platform.dra.rewrite import RewritePlan
from webhook.platform.dra.templates import KIND as TEMPLATE_KIND

SUFFIX_HEX = 8  # 32 random bits: not guessable before the template exists


def _referenced(pods: list[Mapping[str, Any]]) -> set[str]:
    names = set()
    for pod in pods:
        for entry in (pod.get("spec") or {}).get("resourceClaims") or ():
            if is_mapping(entry) and entry.get("resourceClaimTemplateName"):
                names.add(str(entry["resourceClaimTemplateName"]))
    return names


def unclaimed(plan: RewritePlan, state: ClusterState, namespace: str) -> RewritePlan:
    """The plan with a fresh name for each template to create that a stored pod already references."""
    renamed: dict[str, str] = {}
    referenced: set[str] | None = None
    for template in plan.templates:
        name = template["metadata"]["name"]
        if state.get(TEMPLATE_KIND, namespace, name) is not None:
            continue  # exists: shared, and whoever references it was charged for it
        if referenced is None:  # only when a template is new: listing the pods is then worth it
            referenced = _referenced(state.list(POD, namespace))
        if name in referenced:
            renamed[name] = f"{name}-{secrets.token_hex(SUFFIX_HEX // 2)}"
    if not renamed:
        return plan
    templates = tuple({**t, "metadata": {**t["metadata"], "name": renamed[t["metadata"]["name"]]}}
                      if t["metadata"]["name"] in renamed else t for t in plan.templates)
    pod = dict(plan.pod)
    spec = pod["spec"] = dict(pod["spec"])
    spec["resourceClaims"] = [
        {**entry, "resourceClaimTemplateName": renamed[entry["resourceClaimTemplateName"]]}
        if is_mapping(entry) and entry.get("resourceClaimTemplateName") in renamed else entry
        for entry in spec.get("resourceClaims") or ()]
    claims = tuple(replace(c, template=renamed.get(c.template, c.template)) for c in plan.claims)
    return replace(plan, pod=pod, templates=templates, claims=claims)
