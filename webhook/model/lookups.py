"""What policies may read beyond the request; answered by cluster state (leaf module)."""

from __future__ import annotations

from typing import Any, Mapping, Protocol


class LookupRefused(Exception):
    """The data source will not answer this lookup (e.g. network calls offline)."""


class Lookups(Protocol):
    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Mapping | None: ...

    def list(self, api_version: str, kind: str, namespace: str = "", selector: Mapping | None = None) -> list[Mapping]: ...

    def global_context(self, name: str) -> Any: ...  # Kyverno GlobalContextEntry; KeyError if unknown

    def http(self, method: str, url: str, body: Any = None) -> Any: ...  # refused (LookupRefused) unless a test supplies it

    def image_data(self, ref: str) -> Mapping: ...  # refused offline
