"""Label values taken from a request, mapped onto bounded sets before they name a metric series.

Whoever reaches the webhook port can post a review, and each distinct label value is a series that
/metrics keeps for the life of the process: 20,000 reviews of made-up kinds were 20,000 series and
32 MB. A label therefore keeps a request's value only when something a tenant cannot write vouches
for it, and counts everything else as `other`:

- a kind, when Kubernetes serves it (the built-in table of webhook/model/apiresources.py);
- a namespace, when the cluster state holds it (the informers' cache in live mode, where only the
  platform creates namespaces; the `--state` seed and admitted objects standalone), and only the first
  MAX_NAMESPACES of those: standalone records whatever /validate admits, so its state alone is no bound.

The request's operation needs nothing here: parse_review admits only the API server's four.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol

from webhook.model.apiresources import BUILTIN_KINDS
from webhook.model.cluster import NAMESPACE

OTHER = "other"
# distinct namespaces that get a series of their own; the rest share `other` (docs/security.md, threat 1)
MAX_NAMESPACES = 1000


class NamespaceDirectory(Protocol):
    """What the labels ask of the cluster state (a ClusterState is one): whether a namespace exists."""

    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None: ...


class RequestLabels:
    """Bounded label values for a request's kind and namespace. Used on the event loop only."""

    def __init__(self, namespaces: NamespaceDirectory | None = None, max_namespaces: int = MAX_NAMESPACES) -> None:
        self._directory = namespaces  # None: nothing vouches for any namespace
        self._max = max_namespaces
        self._named: set[str] = set()

    def attach(self, namespaces: NamespaceDirectory) -> None:
        """The cluster state, once the composition root has built it (live mode builds it with the metrics)."""
        self._directory = namespaces

    @staticmethod
    def kind(kind: str) -> str:
        return kind if kind in BUILTIN_KINDS else OTHER

    def namespace(self, namespace: str) -> str:
        if not namespace or namespace in self._named:  # "": a cluster-scoped object, one value
            return namespace
        if (self._directory is None or len(self._named) >= self._max
                or self._directory.get(NAMESPACE, "", namespace) is None):
            return OTHER
        self._named.add(namespace)
        return namespace
