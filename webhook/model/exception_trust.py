"""Which PolicyExceptions a policy load honours, and which resources each may exempt.

A PolicyException switches a platform policy off. Anyone who may create one in some namespace (a
tenant, in their own profile) could otherwise exempt every namespace, kube-system included, from a
cluster policy by naming it (Kyverno's CVE-2024-48921). So `serve` and `apply` honour no exception
unless the platform lists the namespaces they may come from (`--exception-namespace`, as Kyverno's
`--exceptionNamespace`; `*` is any namespace), and an exception exempts only resources of its own
namespace: an exception in a tenant's namespace can at most lift a policy off that tenant's objects.

`test` honours the exceptions a suite hands over explicitly, for any resource, as the Kyverno CLI
does with `--exception` and a test file's `exceptions:` (the suite's author wrote both the policy and
the exception); `test --exception-namespace` applies serve's rules instead.
"""

from __future__ import annotations

from webhook.model.quickinit import frozen_dataclass

EVERY_NAMESPACE = "*"
ANY_RESOURCE = ""  # what `reach` answers for an exception that may exempt resources of any namespace


@frozen_dataclass
class ExceptionTrust:
    namespaces: frozenset[str] = frozenset()  # where exceptions are honoured from; "*" = every namespace
    explicit: bool = False  # exceptions handed over explicitly (test suites): honoured as written

    def reach(self, namespace: str) -> str | None:
        """For an exception of `namespace` (metadata.namespace; absent is `default`, where the API server
        would put it): None when it is not honoured, ANY_RESOURCE when it may exempt any resource, else the
        one namespace whose resources it may exempt (its own)."""
        if self.explicit:
            return ANY_RESOURCE
        home = namespace or "default"
        if EVERY_NAMESPACE in self.namespaces or home in self.namespaces:
            return home
        return None

    def refusal(self, namespace: str) -> str:
        """Why an exception of `namespace` is refused (a load error: a file's refuses the set, an object is left
        out and told so on its status), so that nobody mistakes it for one in force."""
        allowed = ", ".join(sorted(self.namespaces)) or "none"
        return (f"PolicyExceptions of namespace {namespace or 'default'} are not honoured: only those of the "
                f"namespaces the platform lists are (--exception-namespace; now: {allowed})")


def exempts_in(reach: str, namespace: str, kind: str) -> bool:
    """Whether an exception of `reach` may exempt a resource of `kind` that the review places in `namespace`.
    A Namespace is cluster-scoped even though its reviews name it as their namespace: a tenant's exception
    never lifts a policy off the Namespace object (its labels choose quotas and admission)."""
    return reach == ANY_RESOURCE or (namespace == reach and kind != "Namespace")


HONOUR_NONE = ExceptionTrust()
HONOUR_GIVEN = ExceptionTrust(explicit=True)
