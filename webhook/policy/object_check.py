"""A policy object judged as it is applied: `kubectl apply` of a ClusterPolicy, a ValidatingPolicy or a
ProfileQuota that would not load is refused then, with the loader's own reasons (field and message), as
Kyverno refuses a bad policy at admission; before, the object was stored and only its Ready condition said it
never loaded.

The check is the loader's, on the one object: its kind's full schema, then its family's compile (a CEL
expression that does not compile, a PolicyException from a namespace not trusted with exceptions, a tenant's
policy reaching outside its namespace). What passes is judged again when the set loads, with the other
policies: a name a policy file already defines loses to the file, which the object's Ready condition says.
Kinds no family owns pass untouched (the webhook is registered only for the policy kinds).
"""

from __future__ import annotations

from typing import Any, Mapping

from webhook.model.review import AdmissionRequest
from webhook.model.verdict import Verdict
from webhook.policy.broken import broken_policies
from webhook.policy.documents import Document
from webhook.policy.loader import PolicyLoader

# how the object's metadata reaches the loader: what its author wrote, never what the API server set
AUTHORED_METADATA = ("name", "namespace", "labels", "annotations")
MAX_REASONS = 5  # a message the user reads in kubectl's output; the Ready condition keeps the whole story


def authored(obj: Mapping[str, Any], api_version: str = "", kind: str = "") -> dict[str, Any]:
    """The object as its author wrote it: no status, no server-set metadata (uid, managedFields...)."""
    meta = obj.get("metadata") or {}
    data = {k: v for k, v in obj.items() if k not in ("metadata", "status")}
    data["metadata"] = {k: meta[k] for k in AUTHORED_METADATA if k in meta}
    if api_version:
        data.setdefault("apiVersion", api_version)
    if kind:
        data.setdefault("kind", kind)
    return data


def object_name(kind: str, namespace: str, name: str) -> str:
    """How errors name a policy object: `ClusterPolicy/require-team (cluster object)`."""
    return f"{kind}/{namespace + '/' if namespace else ''}{name} (cluster object)"


class PolicyObjectCheck:
    def __init__(self, loader: PolicyLoader) -> None:
        self.loader = loader

    def judge(self, request: AdmissionRequest) -> Verdict:
        obj = request.object
        if request.operation not in ("CREATE", "UPDATE") or not isinstance(obj, Mapping):
            return Verdict(allowed=True)
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str) \
                or self.loader.registry.owner(api_version, kind) is None:
            return Verdict(allowed=True)
        meta = obj.get("metadata") or {}
        name = object_name(kind, str(meta.get("namespace") or request.namespace or ""), str(meta.get("name", "")))
        policies, errors = self.loader.compile_documents([Document(name, 0, authored(obj), None)])
        reasons = [f"{error.field}: {error.message}" if error.field else error.message for error in errors]
        reasons += [broken.detail.removeprefix(" field ").removeprefix(": ") for broken in broken_policies(policies)]
        if not reasons:
            return Verdict(allowed=True)
        more = f" (and {len(reasons) - MAX_REASONS} more)" if len(reasons) > MAX_REASONS else ""
        return Verdict(allowed=False, code=422, reason="Invalid",
                       message=f"{name} would not load: {'; '.join(reasons[:MAX_REASONS])}{more}")
