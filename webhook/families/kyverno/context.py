"""The JSON document a Kyverno rule's variables read: the request, images, service account.

Values supplied by a test (Kyverno CLI ``values``) may set any dotted path (``request.operation``). The rule's
context entries are added to it by context_entries.py.
"""

from __future__ import annotations

import copy
import re
from dataclasses import field
from typing import Any, Mapping

from .images import extract_images

from webhook.model.quickinit import frozen_dataclass


@frozen_dataclass
class RequestSubject:
    username: str = ""
    groups: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    cluster_roles: tuple[str, ...] = ()
    uid: str = ""
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)


@frozen_dataclass
class RequestData:
    """One admission (or one resource of a test) as Kyverno's context sees it."""

    operation: str
    object: Mapping[str, Any] | None
    old_object: Mapping[str, Any] | None
    subject: RequestSubject = field(default_factory=RequestSubject)
    kind: Mapping[str, str] = field(default_factory=dict)
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    dry_run: bool = False
    overrides: Mapping[str, Any] = field(default_factory=dict)

    @property
    def resource(self) -> Mapping[str, Any]:
        return (self.old_object if self.operation == "DELETE" else self.object) or {}


def _user_info(subject: RequestSubject) -> dict[str, Any]:
    """As the API server marshals authentication/v1 UserInfo: empty fields are left out (omitempty)."""
    info: dict[str, Any] = {}
    if subject.username:
        info["username"] = subject.username
    if subject.uid:
        info["uid"] = subject.uid
    if subject.groups:
        info["groups"] = list(subject.groups)
    if subject.extra:
        info["extra"] = {key: list(values) for key, values in subject.extra.items()}
    return info


_BASE = object()   # memo key (RuleEnv.memo, the request's EvalContext.memo): (RequestData, its document)


def base_document(request: RequestData, overrides: Mapping[str, Any] | None = None,
                  memo: dict[Any, Any] | None = None) -> dict:
    """The document variables resolve against. Read only: every JsonContext that adds to it copies the maps on
    the way (with_values, load_entries), so the policies of one admission share the one built for it (`memo`)."""
    plain = not overrides and not request.overrides and memo is not None
    if plain:
        last = memo.get(_BASE)  # type: ignore[union-attr]
        if last is not None and last[0] is request:
            return last[1]  # type: ignore[no-any-return]
    doc = _base_document(request, overrides, memo)
    if plain:
        memo[_BASE] = (request, doc)  # type: ignore[index]
    return doc


def _base_document(request: RequestData, overrides: Mapping[str, Any] | None,
                   memo: dict[Any, Any] | None) -> dict:
    subject = request.subject
    doc: dict[str, Any] = {
        "request": {
            # read-only here: JMESPath never mutates, mutation works on its own copy
            "operation": request.operation, "object": request.object, "oldObject": request.old_object,
            "userInfo": _user_info(subject),
            "roles": list(subject.roles), "clusterRoles": list(subject.cluster_roles),
            "namespace": request.namespace, "name": request.name, "kind": dict(request.kind),
            "subResource": request.subresource, "dryRun": request.dry_run,
        },
        "images": extract_images(request.resource, memo),
    }
    match = re.match(r"^system:serviceaccount:([^:]+):([^:]+)$", subject.username)
    doc["serviceAccountName"] = match.group(2) if match else ""
    doc["serviceAccountNamespace"] = match.group(1) if match else ""
    for dotted, value in {**request.overrides, **(overrides or {})}.items():
        set_dotted(doc, dotted, value)
    return doc


_SEGMENT = re.compile(r'"([^"]*)"|([^.]+)')


def set_dotted(doc: dict, dotted: str, value: Any) -> None:
    """Set a.b."c.d", copying the maps on the way so shared request objects are never changed."""
    node = doc
    parts = [quoted or plain for quoted, plain in _SEGMENT.findall(dotted)]
    for part in parts[:-1]:
        child = node.get(part)
        node[part] = dict(child) if isinstance(child, dict) else {}
        node = node[part]
    node[parts[-1]] = copy.deepcopy(value)
