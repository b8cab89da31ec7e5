"""One suite's world: its policies through the same loader and families as `serve`, its resources and
values as the cluster state, and the engine's offline path to admit each resource.

As in the Kyverno CLI, every resource of the suite (and the context's and the values' namespaces) is
in the cluster state before anything is admitted, and every policy runs on every resource: a denial
in the mutate phase does not stop the validate phase, so each policy's result can be checked.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from webhook.app import build_registry
from webhook.cel import CelCompiler
from webhook.engine import AdmissionEngine
from webhook.engine.offline import offline_request
from webhook.model.errors import PolicyLoadError
from webhook.model.exception_trust import HONOUR_GIVEN, ExceptionTrust
from webhook.model.lookups import LookupRefused
from webhook.model.review import UserInfo
from webhook.policy.documents import Document, DocumentError, read_documents
from webhook.policy.family import CelEvaluation
from webhook.policy.cli_values import fold
from webhook.policy.loader import PolicyLoader
from webhook.policy.snapshot import PolicySnapshot, PolicyStore
from webhook.state.memory import InMemoryClusterState
from webhook.testsuite.check import Observed, PolicyInfo
from webhook.testsuite.context import SuiteContext, cluster_resources, suite_context
from webhook.testsuite.load import load_context, load_userinfo, read_objects
from webhook.testsuite.model import Suite, SuiteError
from webhook.testsuite.admission import as_kyverno_cli

_COMPILER: CelCompiler | None = None  # one compile cache for every suite of a run
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")


def _compiler() -> CelCompiler:
    global _COMPILER
    if _COMPILER is None:
        _COMPILER = CelCompiler()
    return _COMPILER


@dataclass
class SuiteLookups:
    """The state's lookups, plus what the suite's context supplies (image metadata) and its values."""

    base: Any
    images: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    suite: Suite | None = None
    # the suite's userinfo file as Kyverno reads it ({roles, clusterRoles, userInfo}), for families that
    # match on roles (Kyverno ClusterPolicy); CEL policies see only request.userInfo
    request_info: Mapping[str, Any] = field(default_factory=dict)
    context: SuiteContext = field(default_factory=SuiteContext)

    # the kinds the suite's objects have, by lower-case name: a lookup by resource name (`computeclasses`)
    # cannot know a CRD kind's capitals (ComputeClass)
    kinds: Mapping[str, str] = field(default_factory=dict)

    @property
    def supplied(self) -> "SuiteLookups":
        return self

    def _kind(self, kind: str) -> str:
        return self.kinds.get(kind.lower(), kind)

    # Secrets as the suite wrote them: the standalone state keeps no Secret data, a test may clone it
    secrets: Mapping[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)

    def _with_data(self, obj: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        if obj is None or obj.get("kind") != "Secret":
            return obj
        meta = obj.get("metadata") or {}
        written = self.secrets.get((str(meta.get("namespace", "")), str(meta.get("name", ""))), {})
        return {**obj, **{k: v for k, v in written.items() if k in ("data", "stringData")}}

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self._with_data(self.base.get(api_version, self._kind(kind), namespace, name))

    def list(self, api_version: str, kind: str, namespace: str = "", selector: Mapping[str, Any] | None = None) -> list:
        return [self._with_data(o) for o in self.base.list(api_version, self._kind(kind), namespace, selector)]

    def global_context(self, name: str) -> Any:
        if name in self.context.globals:
            return self.context.globals[name]
        raise KeyError(name)

    def http(self, method: str, url: str, body: Any = None) -> Any:
        try:
            return self.context.answer(method, url)
        except KeyError:
            raise LookupRefused(f"HTTP call {method} {url}: the test suite supplies no response for it "
                                f"(apiCallResponses)") from None

    def image_data(self, ref: str) -> Mapping[str, Any]:
        found = self.images.get(ref)
        if found is None:
            raise LookupRefused(f"image data for {ref}: not in the test's context")
        return found

    def foreach_values_for(self, policy: str, rule: str) -> Mapping[str, list[Any]]:
        """Kyverno CLI `foreachValues` of a rule: per context entry, one value per foreach element."""
        return self.suite.values.foreach_values_for(policy, rule) if self.suite is not None else {}

    def values_for(self, policy: str, resource: str, rule: str = "") -> Mapping[str, Any]:
        """Kyverno CLI values for one policy and resource (webhook/policy/cli_values.py says in which order)."""
        return self.suite.values.values_for(policy, resource, rule) if self.suite is not None else {}


def _documents(suite: Suite, names: Sequence[str]) -> list[Document]:
    docs: list[Document] = []
    for name in names:
        path = suite.resolve(name)
        files = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml")) if path.is_dir() else [path]
        for file in files:
            try:
                docs.extend(read_documents(file, str(Path(name) / file.relative_to(path)) if path.is_dir() else name))
            except DocumentError as exc:
                raise SuiteError(f"{suite.path}: policy {exc.file}: {exc.message}") from None
            except OSError as exc:
                raise SuiteError(f"{suite.path}: cannot read policy {name}: {exc.strerror or exc}") from None
    return docs


def _user(suite: Suite) -> UserInfo:
    """The suite's userinfo file's user; without one, none (empty, as `kyverno test` leaves it)."""
    info = fold(load_userinfo(suite).get("userinfo"))
    if not info:
        return UserInfo()
    extra = {str(k): tuple(str(i) for i in v or []) for k, v in (info.get("extra") or {}).items()}
    return UserInfo(str(info.get("username", "")), tuple(str(g) for g in info.get("groups") or []),
                    str(info.get("uid", "") or ""), extra)


def _name(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


def _strip(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(obj))
    meta = out.get("metadata") or {}
    for key in SERVER_FIELDS:
        meta.pop(key, None)
    return out


def _refused(suite: Suite, documents: Sequence[Document], exceptions: set[tuple[str, int]],
             errors: Sequence[PolicyLoadError]) -> list[PolicyInfo]:
    """Refused policy documents that a result names: those results fail with the reason, the rest of the
    suite runs. Any other refusal (an exception, a document no result names) fails the whole suite."""
    by_place = {(d.file, d.index): d for d in documents}
    named = {r.policy_name for r in suite.results}
    refused = []
    for error in errors:
        doc = by_place.get((error.file, error.document))
        data = doc.data if doc is not None and isinstance(doc.data, Mapping) else {}
        name = str((data.get("metadata") or {}).get("name", "")) if isinstance(data.get("metadata"), Mapping) else ""
        if doc is None or name not in named or (error.file, error.document) in exceptions:
            raise SuiteError("policies refused: " + "; ".join(str(e) for e in errors[:3]))
        refused.append(PolicyInfo(str(data.get("kind", "")), name, refused=str(error)))
    return refused


class SuiteWorld:
    def __init__(self, suite: Suite, resources: list[dict[str, Any]], exceptions: ExceptionTrust = HONOUR_GIVEN,
                 cel_evaluation: CelEvaluation = CelEvaluation.DEFAULT) -> None:
        """`exceptions`: the suite's own exceptions are honoured as written, as the Kyverno CLI honours those it
        is handed (`test --exception-namespace` asks for serve's rules instead). `cel_evaluation`: as serve's."""
        registry = build_registry()
        loader = PolicyLoader(registry, _compiler(), exceptions, cel_evaluation)
        exceptions = _documents(suite, suite.exceptions)
        documents = _documents(suite, suite.policies) + exceptions
        compiled, errors = loader.compile_documents(documents)
        refused = _refused(suite, documents, {(d.file, d.index) for d in exceptions}, errors)
        self.policies = [PolicyInfo(p.id.kind, p.id.name, p.traits.excluded_when_unmatched)
                         for p in compiled] + refused
        compiled = as_kyverno_cli(compiled)
        store = PolicyStore()
        store.publish(PolicySnapshot.of(compiled, 1))
        context_objects, images = load_context(suite)
        clone_sources = tuple(dict.fromkeys(r.clone_source_resource for r in suite.results if r.clone_source_resource))
        objects = (suite.values.namespace_objects() + context_objects + read_objects(suite, suite.param_resources, "paramResources")
                   + read_objects(suite, clone_sources, "cloneSourceResource")
                   + cluster_resources(suite, suite.cluster_resources))
        self.state = InMemoryClusterState(objects + [copy.deepcopy(r) for r in resources])
        kinds = {str(o.get("kind", "")).lower(): str(o.get("kind", "")) for o in objects + resources}
        self.lookups = SuiteLookups(self.state.lookups, images, suite, load_userinfo(suite),
                                    suite_context(suite, suite.api_calls, suite.global_entries), kinds,
                                    {_name(o): o for o in objects + resources if o.get("kind") == "Secret"})
        self.engine = AdmissionEngine(store, self.state, lookups=self.lookups)
        self.user = _user(suite)
        self.values = suite.values

    async def admit(self, resource: Mapping[str, Any], operation: str) -> Observed:
        resource = copy.deepcopy(dict(resource))
        new = None if operation == "DELETE" else resource
        old = copy.deepcopy(resource) if operation in ("UPDATE", "DELETE") else None
        request = self.values.as_subresource(offline_request(new, operation=operation, old=old, user=self.user))
        mutated = await self.engine.mutate(request)
        final = dict(mutated.object) if mutated.object is not None else None
        verdict = await self.engine.validate(request if final is None else replace(request, object=final), offline=True)
        return Observed(resource, list(mutated.verdict.results) + list(verdict.results), final,
                        [_strip(g) for g in verdict.generated], steps=list(mutated.steps))


async def build_world(suite: Suite, resources: list[dict[str, Any]],
                      exceptions: ExceptionTrust = HONOUR_GIVEN,
                      cel_evaluation: CelEvaluation = CelEvaluation.DEFAULT) -> SuiteWorld:
    return SuiteWorld(suite, resources, exceptions, cel_evaluation)
