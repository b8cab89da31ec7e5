"""Lookups (webhook.model.lookups) answered from a cluster state's objects.

Objects are found by kind and checked against the API group asked for; the version is not compared,
since one object is served at several versions. Global context entries, HTTP and image registries
are not part of a cluster state: they are refused with a message saying so.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from webhook.model.lookups import LookupRefused, SuppliedValues
from webhook.model.selectors import parse_selector


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


class StateLookups:
    supplied: SuppliedValues | None = None  # admission: the cluster is the only source

    def __init__(self, get: Callable[[str, str, str], Mapping[str, Any] | None],
                 list_: Callable[[str, str], list[Mapping[str, Any]]], holds: Callable[[str], bool], where: str) -> None:
        self._get, self._list, self._holds, self._where = get, list_, holds, where

    def _check(self, kind: str) -> None:
        if not self._holds(kind):
            raise LookupRefused(f"{self._where} holds no {kind} objects, so a policy cannot look them up here")

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        self._check(kind)
        found = self._get(kind, namespace, name)
        if found is None or _group(str(found.get("apiVersion", ""))) != _group(api_version):
            return None
        return found

    def list(self, api_version: str, kind: str, namespace: str = "",
             selector: Mapping[str, Any] | None = None) -> list[Mapping[str, Any]]:
        self._check(kind)
        try:
            wanted = parse_selector(selector)
        except ValueError as exc:
            raise LookupRefused(f"invalid label selector: {exc}") from None
        group = _group(api_version)
        return [o for o in self._list(kind, namespace) if _group(str(o.get("apiVersion", ""))) == group
                and wanted.matches((o.get("metadata") or {}).get("labels"))]

    def global_context(self, name: str) -> Any:
        raise LookupRefused(f"global context entry {name!r}: {self._where} keeps no global context; "
                            f"supply its value in the test's context")

    def http(self, method: str, url: str, body: Any = None) -> Any:
        raise LookupRefused(f"HTTP call {method} {url}: Quartermaster makes no HTTP calls from policies here")

    def image_data(self, ref: str) -> Mapping[str, Any]:
        raise LookupRefused(f"image data for {ref}: no image registry is queried here")
