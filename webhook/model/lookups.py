"""What a policy may read beyond the request: objects, global context entries, HTTP, image metadata.

A leaf: cluster state answers it (standalone store, live informers, a test's context). What a source
cannot answer is refused with LookupRefused and a message that says why, never guessed.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol


class LookupRefused(Exception):
    """This source cannot answer that lookup (offline HTTP, a kind no informer holds...); the message says why."""


class SuppliedValues(Protocol):
    """What a `kyverno test` suite or `apply --values-file/--set` says about the world a resource lives in
    (webhook/policy/cli_values.py): only the offline commands have them."""

    # the suite's userinfo file as Kyverno reads it ({roles, clusterRoles, userInfo}); empty when none
    request_info: Mapping[str, Any]

    def values_for(self, policy: str, resource: str, rule: str = "") -> Mapping[str, Any]:
        """Values for one policy and resource, and for one of its rules when `rule` names it."""

    def foreach_values_for(self, policy: str, rule: str) -> Mapping[str, list[Any]]:
        """A rule's `foreachValues`: per context entry, one value per foreach element."""


class Lookups(Protocol):
    # the values the offline commands supply (None in admission: the cluster is the only source)
    supplied: SuppliedValues | None

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    def list(self, api_version: str, kind: str, namespace: str = "",
             selector: Mapping[str, Any] | None = None) -> list[Mapping[str, Any]]: ...

    def global_context(self, name: str) -> Any:
        """A Kyverno GlobalContextEntry's data; KeyError if unknown, LookupRefused if this source has none."""

    def http(self, method: str, url: str, body: Any = None) -> Any:
        """Refused (LookupRefused) unless a test supplies the answer."""

    def image_data(self, ref: str) -> Mapping[str, Any]:
        """Registry metadata of an image; refused offline."""


class NoLookups:
    """Refuses everything: the default where no state was wired (unit tests of one policy)."""

    supplied: SuppliedValues | None = None

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        raise LookupRefused(f"no cluster state to read {kind} {namespace + '/' if namespace else ''}{name} from")

    def list(self, api_version: str, kind: str, namespace: str = "",
             selector: Mapping[str, Any] | None = None) -> list[Mapping[str, Any]]:
        raise LookupRefused(f"no cluster state to list {kind} from")

    def global_context(self, name: str) -> Any:
        raise LookupRefused(f"no global context entries here (asked for {name!r})")

    def http(self, method: str, url: str, body: Any = None) -> Any:
        raise LookupRefused(f"HTTP calls are not made here ({method} {url})")

    def image_data(self, ref: str) -> Mapping[str, Any]:
        raise LookupRefused(f"image registries are not queried here ({ref})")


NO_LOOKUPS = NoLookups()
