"""What a namespaced policy may reach: the objects of its own namespace, to read and to generate.

A namespaced policy (Kyverno `Policy`, `NamespacedValidatingPolicy`...) is written by whoever may write in
that namespace: a tenant. Its lookups (`configMap`, `apiCall`, `resource.Get/List`, clone sources) and
what it generates are carried out with the webhook's own identity, so without a bound they would read and
write every namespace the webhook's ServiceAccount reaches (Kyverno's CVE-2026-22039 and CVE-2026-41068
for reads, the same family of advisories for generation). The bound follows Kyverno's fix: a lookup must
name the policy's namespace; a cluster-scoped object (no namespace) and a list over all namespaces are
refused; a generated object lands in the policy's namespace or nowhere. Cluster policies are not bound:
only the platform writes them.
"""

from __future__ import annotations

from typing import Any, Mapping

from webhook.model.apiresources import is_namespaced
from webhook.model.lookups import LookupRefused, Lookups


def _refused(policy_namespace: str, what: str, namespace: str) -> LookupRefused:
    where = f"namespace {namespace}" if namespace else "the whole cluster (no namespace)"
    return LookupRefused(f"a policy of namespace {policy_namespace} may read only its own namespace; "
                         f"{what} asks for {where}")


class NamespaceBoundLookups:
    """A Lookups that answers only reads of `namespace`; everything else goes to `inner` unchanged."""

    def __init__(self, inner: Lookups, namespace: str) -> None:
        self.inner = inner
        self.namespace = namespace
        self.supplied = inner.supplied

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        if namespace != self.namespace:
            raise _refused(self.namespace, f"{kind} {name}", namespace)
        return self.inner.get(api_version, kind, namespace, name)

    def list(self, api_version: str, kind: str, namespace: str = "",
             selector: Mapping[str, Any] | None = None) -> list[Mapping[str, Any]]:
        if namespace != self.namespace:
            raise _refused(self.namespace, f"a list of {kind}", namespace)
        return self.inner.list(api_version, kind, namespace, selector)

    def global_context(self, name: str) -> Any:
        # global context entries are cluster-scoped objects only the platform defines
        return self.inner.global_context(name)

    def http(self, method: str, url: str, body: Any = None) -> Any:
        return self.inner.http(method, url, body)

    def image_data(self, ref: str) -> Mapping[str, Any]:
        return self.inner.image_data(ref)


def bound_lookups(lookups: Lookups | None, policy_namespace: str) -> Lookups | None:
    """What a policy of `policy_namespace` ("" for a cluster policy) reads through."""
    if not policy_namespace or lookups is None:
        return lookups
    return NamespaceBoundLookups(lookups, policy_namespace)


def home_namespace(lookups: Lookups | None) -> str:
    """Where a lookup that names no namespace looks: the policy's own namespace, else `default`."""
    return lookups.namespace if isinstance(lookups, NamespaceBoundLookups) else "default"


def generation_refusal(obj: Mapping[str, Any], policy_namespace: str) -> str | None:
    """Why a policy of `policy_namespace` may not create `obj` (None: it may). A cluster policy may create
    anything its rules say; a namespaced one only namespaced objects of its own namespace."""
    if not policy_namespace:
        return None
    meta = obj.get("metadata")
    namespace = str((meta.get("namespace") if isinstance(meta, Mapping) else None) or "")
    kind = f"{obj.get('apiVersion', '')} {obj.get('kind', '')}".strip()
    if not is_namespaced(str(obj.get("apiVersion", "")), str(obj.get("kind", ""))):
        return f"a policy of namespace {policy_namespace} may not generate the cluster-scoped {kind}"
    if namespace != policy_namespace:
        return (f"a policy of namespace {policy_namespace} may generate only into its own namespace, "
                f"not {kind} in namespace {namespace or '(none)'}")
    return None
