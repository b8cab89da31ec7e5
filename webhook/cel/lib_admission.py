"""Kubernetes admission extras: the authorizer library and the JSONPatch helpers.

Quartermaster has no API server to ask, so an authorizer check is an evaluation error naming why;
building the request (`authorizer.group(...).resource(...)`) still compiles and type-checks.
"""

from __future__ import annotations

from typing import Any

from webhook.cel.functions import Library, fn, method
from webhook.cel.values import expect, opaque

AUTHORIZER = opaque("authorizer", requestResource=opaque("authorizer_request"))


def _step(field: str):
    def build(request: Any, value: str) -> dict[str, Any]:
        return {**request, field: value}
    return build


def _check(request: Any, verb: str) -> Any:
    raise ValueError(f"authorizer.check({verb!r}): no API server can answer authorization checks here "
                     "(Quartermaster evaluates policies without an authorizer)")


def _decision(decision: Any) -> Any:
    raise ValueError("authorizer decisions are not available: no API server can answer authorization checks here")


def _service_account(request: Any, namespace: str, name: str) -> dict[str, Any]:
    expect(request, "authorizer")
    return opaque("authorizer", user=f"system:serviceaccount:{namespace}:{name}")


def escape_key(key: str) -> str:
    """RFC 6901: `~` first, then `/`, so a key can be one JSON Pointer segment."""
    return key.replace("~", "~0").replace("/", "~1")


AUTHZ = Library("authz", tuple(
    [method(name, ["map", "string"], "map", _step(name))
     for name in ("group", "resource", "subresource", "namespace", "name", "path")]
    + [method(name, ["map"], kind, _decision) for name, kind in
       (("allowed", "bool"), ("denied", "bool"), ("reason", "string"), ("errored", "bool"), ("error", "string"))]
    + [method("check", ["map", "string"], "map", _check),
       method("serviceAccount", ["map", "string", "string"], "map", _service_account)]
))

JSONPATCH = Library("jsonpatch", (
    fn("jsonpatch.escapeKey", ["string"], "string", escape_key),
))
