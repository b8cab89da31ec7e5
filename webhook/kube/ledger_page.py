"""The reservation ledger of one profile as a ConfigMap in the webhook's own namespace.

Why a ConfigMap and not a Lease: a Lease's spec has fixed fields (holder, renew time), so reservations would
hide in annotations (256 KiB in all); a ConfigMap's `data` is a plain map of strings (1 MiB), one readable
entry per reservation with `kubectl get configmap -o yaml`. Tenants cannot write it: it lives in the
webhook's namespace, where the chart's Role grants the webhook get, create and update on ConfigMaps and
profiles have no rights at all.

One entry per admitted object and quota policy, keyed `<policy>.<uid>`, its value a small JSON object:
`{"kind": "Pod", "name": "nb-1", "gpus": "1", "storage": "0", "unbounded": false, "replaces": "",
"expires": "2026-01-01T00:00:30.000000Z"}` (amounts as exact fractions, storage in bytes).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from datetime import datetime, timezone
from fractions import Fraction
from typing import Any, Mapping

from webhook.model.quickinit import frozen_dataclass
from webhook.state.replicas import Hold

log = logging.getLogger(__name__)

DATA_KEY = re.compile(r"[-._a-zA-Z0-9]{1,253}")  # what a ConfigMap accepts as a key
MANAGED_BY = {"app.kubernetes.io/managed-by": "quartermaster", "app.kubernetes.io/component": "quota-ledger"}


def ledger_name(prefix: str, namespace: str) -> str:
    """One ConfigMap per profile (a namespace name is at most 63 characters: the name stays valid)."""
    return f"{prefix}.{namespace}"


def entry_key(policy: str, uid: str) -> str:
    key = f"{policy}.{uid}"
    if DATA_KEY.fullmatch(key):
        return key
    return f"{policy[:100]}.{hashlib.sha256(key.encode()).hexdigest()[:32]}"  # a uid the API server did not give


def _stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def encode(hold: Hold) -> str:
    return json.dumps({"uid": hold.uid, "kind": hold.kind, "name": hold.name, "gpus": str(hold.gpus),
                       "storage": str(hold.storage), "unbounded": hold.unbounded, "replaces": hold.replaces,
                       "expires": _stamp(hold.expires)}, separators=(", ", ": "))


def decode(text: str) -> Hold:
    """Raises ValueError (or KeyError, TypeError) on an entry that is not ours."""
    entry = json.loads(text)
    expires = datetime.fromisoformat(str(entry["expires"]).replace("Z", "+00:00")).timestamp()
    return Hold(str(entry["uid"]), str(entry["kind"]), str(entry["name"]), Fraction(str(entry["gpus"])),
                Fraction(str(entry["storage"])), bool(entry["unbounded"]), str(entry.get("replaces") or ""), expires)


@frozen_dataclass
class LedgerPage:
    """One read of a profile's ledger: its entries and the resourceVersion a write must match."""

    namespace: str  # the webhook's namespace
    name: str
    resource_version: str  # "" when the ConfigMap does not exist yet (the write creates it)
    data: Mapping[str, str]

    @classmethod
    def of(cls, namespace: str, name: str, found: Mapping[str, Any] | None) -> "LedgerPage":
        if found is None:
            return cls(namespace, name, "", {})
        meta = found.get("metadata") or {}
        data = found.get("data") or {}
        return cls(namespace, name, str(meta.get("resourceVersion") or ""),
                   {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {})

    def holds(self, policy: str) -> dict[str, Hold]:
        """The entries of one policy, by key; one that does not decode is logged and left out."""
        prefix = f"{policy}."
        out = {}
        for key, text in self.data.items():
            if not key.startswith(prefix):
                continue
            try:
                out[key] = decode(text)
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("quota ledger %s/%s: entry %s ignored: %s", self.namespace, self.name, key, exc)
        return out

    def written(self, policy: str, hold: Hold, now: float, profile: str, withdrawn: tuple[str, ...] = ()) -> dict[str, Any]:
        """The ConfigMap with `hold` added, and without every expired entry (of any policy) and the `withdrawn`
        uids of `policy` (requests refused after all). Entries whose object this replica's state shows are kept
        until they expire: another replica's state may not show it yet."""
        gone = {entry_key(policy, uid) for uid in withdrawn}
        data = {}
        for key, text in self.data.items():
            if key in gone:
                continue
            try:
                if decode(text).expires <= now:
                    continue
            except (ValueError, KeyError, TypeError):
                continue  # not an entry of ours: dropped
            data[key] = text
        data[entry_key(policy, hold.uid)] = encode(hold)
        meta: dict[str, Any] = {"name": self.name, "namespace": self.namespace,
                                "labels": {**MANAGED_BY, "quartermaster.dev/profile": profile}}
        if self.resource_version:
            meta["resourceVersion"] = self.resource_version  # the precondition: 409 Conflict if it changed
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}
