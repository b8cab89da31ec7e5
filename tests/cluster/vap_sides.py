"""The two sides of the VAP/MAP comparison, each answering with the same normalized `Decision`.

In-tree: the object is created with a server-side dry run through the real API server, which runs its admission
plugins (ValidatingAdmissionPolicy, MutatingAdmissionPolicy) and stores nothing. Quartermaster: the same
policy documents served standalone (`serve --policies DIR --state DIR`, as `quartermaster apply` evaluates
them), sent the AdmissionReview the API server would send for that request: the object as the API server
defaulted it, the requester's real userInfo, the resource as discovery names it.

What is compared is what each says, without its framing: the API server words a denial "ValidatingAdmissionPolicy
'p' with binding 'b' denied request: M" and a warning "Validation failed for ValidatingAdmissionPolicy 'p' with
binding 'b': M"; Quartermaster, as a webhook, "[p/b] M" and "p: M" (shortened for kubectl to 120 characters)."""

from __future__ import annotations

import asyncio
import json
import re
import urllib.parse
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from tests.cluster.kube import Kube
from tests.support import decode_patch, apply_patch, running_server

OPT_OUT = {"quartermaster.dev/admission": "disabled"}  # the chart's webhooks leave the namespace alone
_DENIAL = re.compile(r"ValidatingAdmissionPolicy '([^']+)' with binding '([^']+)' denied request: (.*)\Z", re.S)
_WARNING = re.compile(r"Validation failed for ValidatingAdmissionPolicy '([^']+)' with binding '([^']+)': (.*)\Z", re.S)
_MUTATION_FAILED = re.compile(r"policy '[^']+' with binding '[^']+' denied request: ")
_OURS = re.compile(r"\[([^\]/]+)/([^\]]*)\] (.*?)(?=; \[[^\]/]+/[^\]]*\] |\Z)", re.S)


@dataclass(frozen=True)
class Decision:
    """What one side decided for one request. `reached`: False when the API server refused the object before
    its validating admission (its own validation), so there is nothing to compare."""
    allowed: bool
    denials: tuple[tuple[str, str, str], ...] = ()  # (policy, binding, message): the API server reports the first
    code: int = 200
    warnings: tuple[tuple[str, str], ...] = ()  # (policy, message), sorted
    reached: bool = True
    stored: Mapping[str, Any] | None = field(default=None, compare=False)  # the object as admitted (mutated)
    raw: str = field(default="", compare=False)


@dataclass(frozen=True)
class Request:
    """One create as a user sends it: the object (namespace set) and where it goes."""
    obj: dict[str, Any]
    plural: str
    namespaced: bool

    @property
    def namespace(self) -> str:
        return self.obj["metadata"].get("namespace", "") if self.namespaced else ""


def _unquote_warning(value: str) -> str:
    # RFC 7234 warning: 299 - "text" (quotes and backslashes escaped)
    match = re.match(r'\d{3} \S+ "(.*)"\s*\Z', value, re.S)
    text = match.group(1) if match else value
    return re.sub(r'\\(.)', r'\1', text)


def in_tree(kube: Kube, request: Request) -> Decision:
    """A server-side dry-run create; the API server's answer as a Decision."""
    resource = kube.resource(request.obj["apiVersion"], request.obj["kind"])
    path = resource.path(namespace=request.namespace or None)
    url = kube.api_client.configuration.host + path + "?" + urllib.parse.urlencode({"dryRun": "All"})
    answer = kube.api_client.rest_client.pool_manager.request(
        "POST", url, body=json.dumps(request.obj), headers={"Content-Type": "application/json",
                                                            "Accept": "application/json"})
    body = json.loads(answer.data or b"{}")
    warnings = tuple(sorted((m.group(1), m.group(3)) for w in answer.headers.getlist("Warning")
                            if (m := _WARNING.search(_unquote_warning(w)))))
    if 200 <= answer.status < 300:
        return Decision(True, warnings=warnings, stored=body, raw=json.dumps(body)[:300])
    message = str(body.get("message", ""))
    found = _DENIAL.search(message)
    if found is None and _MUTATION_FAILED.search(message):  # a MutatingAdmissionPolicy's mutation failed
        return Decision(False, code=answer.status, warnings=warnings, raw=message)
    if found is None:  # refused by something else than the policies (validation, another plugin)
        return Decision(False, code=answer.status, warnings=warnings, reached=False, raw=message)
    return Decision(False, ((found.group(1), found.group(2), found.group(3)),), answer.status, warnings, raw=message)


def requester(kube: Kube) -> dict[str, Any]:
    """userInfo as the API server puts it in a review: SelfSubjectReview answers with exactly that."""
    answer = kube.create({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    info = answer["status"]["userInfo"]
    return {k: v for k, v in info.items() if v}


def defaulted(kube: Kube, request: Request) -> dict[str, Any] | None:
    """The object as the API server's validating admission sees it (decoded, defaulted, mutated by the
    ServiceAccount plugin...): a dry run that no policy binding selects."""
    decision = in_tree(kube, request)
    return dict(decision.stored) if decision.allowed and decision.stored else None


def admission_review(request: Request, obj: Mapping[str, Any], user: Mapping[str, Any]) -> dict[str, Any]:
    group, _, version = request.obj["apiVersion"].rpartition("/")
    gvk = {"group": group, "version": version, "kind": request.obj["kind"]}
    gvr = {"group": group, "version": version, "resource": request.plural}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": str(uuid.uuid4()), "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
        "name": obj.get("metadata", {}).get("name", ""), "namespace": request.namespace, "operation": "CREATE",
        "userInfo": dict(user), "object": dict(obj), "oldObject": None, "dryRun": True,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions", "dryRun": ["All"]}}}


def _ours(response: Mapping[str, Any], obj: Mapping[str, Any]) -> Decision:
    warnings = []
    for text in response.get("warnings") or []:
        policy, _, message = text.partition(": ")
        warnings.append((policy, message))
    stored = apply_patch(obj, decode_patch(response)) if response.get("patch") else dict(obj)
    if response["allowed"]:
        return Decision(True, warnings=tuple(sorted(warnings)), stored=stored)
    status = response.get("status") or {}
    denials = tuple((m.group(1), m.group(2), m.group(3)) for m in _OURS.finditer(status.get("message", "")))
    return Decision(False, denials, int(status.get("code", 0)), tuple(sorted(warnings)), raw=status.get("message", ""))


async def _quartermaster(policies: Path, state: Path, workdir: Path,
                         reviews: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Decision]:
    out = []
    async with running_server(policies, workdir, state=state) as server:
        for path, review in reviews:
            out.append(_ours(await server.admit(path, review), review["request"]["object"]))
    return out


def quartermaster(documents: Sequence[Mapping[str, Any]], namespaces: Sequence[Mapping[str, Any]], workdir: Path,
                  reviews: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Decision]:
    """Each (path, review) through a standalone server holding exactly `documents`, the namespaces as its state."""
    policies, state = workdir / "policies", workdir / "state"
    policies.mkdir(parents=True, exist_ok=True)
    state.mkdir(parents=True, exist_ok=True)
    (policies / "policies.yaml").write_text(yaml.safe_dump_all([dict(d) for d in documents]))
    (state / "namespaces.yaml").write_text(yaml.safe_dump_all([dict(n) for n in namespaces]))
    return asyncio.run(_quartermaster(policies, state, workdir, reviews))


def same_warnings(theirs: Sequence[tuple[str, str]], ours: Sequence[tuple[str, str]]) -> bool:
    """The same failures warned about: ours are shortened for kubectl (kubetext.clean_warning) as for every
    policy kind, so a message may be a prefix ending in '...'."""
    if len(theirs) != len(ours):
        return False
    pending = list(ours)
    for policy, message in theirs:
        found = next((o for o in pending if o[0] == policy and _same_text(message, o[1])), None)
        if found is None:
            return False
        pending.remove(found)
    return True


def _same_text(full: str, shown: str) -> bool:
    full, shown = " ".join(full.split()), " ".join(shown.split())
    return full == shown or (shown.endswith("...") and full.startswith(shown[:-3].rstrip()))
