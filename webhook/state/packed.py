"""Pods kept as compressed JSON: the bulk of a large cluster's state at a fraction of its decoded size.

A pod decoded into Python dicts and strings takes several times its JSON text, and a cluster's pods are most
of what the state holds (each differs in names, uids, IPs, labels, env values, so nothing can be shared).
The live informer cache and the standalone state's seed keep them packed; a read unpacks a private copy,
which nobody edits (objects are replaced whole). The other kinds are few and read often: they stay decoded.

`QUARTERMASTER_PACKED_STATE=0` keeps every object decoded (the reference: same answers, more memory).
"""

from __future__ import annotations

import os
import zlib
from typing import Any, Mapping

import orjson

PACKED_KINDS = frozenset({"Pod"})
ENABLED = os.environ.get("QUARTERMASTER_PACKED_STATE", "1").strip().lower() not in ("0", "false", "off", "no")
# zlib's fastest level: most of a pod's text is keys and values repeated within it
LEVEL = 1


def packs(kind: str) -> bool:
    return ENABLED and kind in PACKED_KINDS


def pack(obj: Mapping[str, Any]) -> bytes:
    return zlib.compress(orjson.dumps(obj), LEVEL)


def unpack(data: bytes) -> dict[str, Any]:
    decoded: dict[str, Any] = orjson.loads(zlib.decompress(data))
    return decoded


def stored(value: Mapping[str, Any] | bytes) -> Mapping[str, Any]:
    """A stored value as an object: unpacked when packed."""
    return unpack(value) if type(value) is bytes else value  # type: ignore[arg-type,return-value]
