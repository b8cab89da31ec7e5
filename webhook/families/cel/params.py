"""Parameter resources of admission policies (paramKind + a binding's paramRef), read through Lookups.

As Kubernetes resolves them: a policy without paramKind evaluates once with `params` null; a paramRef
names one object (`name`) or selects several (`selector`, each evaluated); its namespace defaults to
the request's for a namespaced param kind; nothing found is an error unless
`parameterNotFoundAction: Allow`, which admits.
"""

from __future__ import annotations

from typing import Any, Mapping

from webhook.model.apiresources import is_namespaced
from webhook.model.policy import EvalContext
from webhook.model.review import AdmissionRequest


class NoParams(Exception):
    def __init__(self, message: str, allow: bool) -> None:
        super().__init__(message)
        self.allow = allow


def resolve_params(param_kind: Mapping[str, str] | None, ref: Mapping[str, Any] | None, request: AdmissionRequest,
                   ctx: EvalContext, as_list: bool = False) -> list[Any]:
    """The `params` values to evaluate with, one evaluation each; `as_list` (the Kyverno CLI's reading, for
    `quartermaster test` only): a selector's objects together, as one {items: [...]} value."""
    if not param_kind:
        return [None]
    api_version, kind = str(param_kind.get("apiVersion", "")), str(param_kind.get("kind", ""))
    allow = bool(ref) and ref.get("parameterNotFoundAction") == "Allow"
    if not ref:
        raise NoParams(f"the policy needs {kind} params but its binding has no paramRef", False)
    namespace = str(ref.get("namespace") or "")
    if not namespace and is_namespaced(api_version, kind):
        namespace = request.namespace
    if ref.get("name"):
        found = ctx.lookups.get(api_version, kind, namespace, str(ref["name"]))
        params = [found] if found is not None else []
    else:
        params = list(ctx.lookups.list(api_version, kind, namespace, ref.get("selector") or {}))
    if not params:
        what = f"{kind} {namespace + '/' if namespace else ''}{ref.get('name') or '(selector)'}"
        raise NoParams(f"no params found for policy binding: {what} does not exist", allow)
    if as_list and not ref.get("name"):
        return [{"items": [dict(p) for p in params]}]
    return [dict(p) for p in params]
