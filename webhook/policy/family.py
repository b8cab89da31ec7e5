"""A policy family: the unit of extension (the platform batteries, CEL admission policies, Kyverno policies).

A family owns some document kinds (apiVersion + kind), brings their schemas, and compiles ALL of its
documents at once, so bindings, params and exceptions can join their policies. The composition root
(webhook/app.py) registers the families; this package never imports one.
"""

from __future__ import annotations

import threading
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Protocol, Sequence

from webhook.cel import CelCompiler
from webhook.model.errors import PolicyLoadError
from webhook.model.exception_trust import HONOUR_NONE, ExceptionTrust
from webhook.model.policy import CompiledPolicy
from webhook.model.quickinit import frozen_dataclass
from webhook.policy.documents import Document

if TYPE_CHECKING:  # jsonschema is imported when the first document with a schema is checked
    from jsonschema import Draft202012Validator


@frozen_dataclass
class PolicyKind:
    api_version: str
    kind: str
    # JSON Schema of the whole document, checked by the loader before the family sees it (a violation
    # refuses the whole set); None: the family validates the document itself. The Helm chart's CRD
    # schemas derive from these.
    schema: Mapping[str, Any] | None

    @property
    def key(self) -> tuple[str, str]:
        return (self.api_version, self.kind)


class CelEvaluation(str, Enum):
    """How CEL policies are evaluated (`--cel-evaluation`, QUARTERMASTER_CEL_EVALUATION)."""

    DEFAULT = "default"  # each policy on the route its family planned for it (`validate --explain` shows it)
    REFERENCE = "reference"  # every policy on the reference route: each expression in turn, no fast path


@frozen_dataclass
class CompileEnv:
    cel: CelCompiler
    exceptions: ExceptionTrust = HONOUR_NONE  # which PolicyExceptions join their policies (model/exception_trust.py)
    cel_evaluation: CelEvaluation = CelEvaluation.DEFAULT


@frozen_dataclass
class FamilyResult:
    policies: tuple[CompiledPolicy, ...]  # broken ones carry .error
    errors: tuple[PolicyLoadError, ...] = ()  # set-level errors: these refuse the whole load


class PolicyFamily(Protocol):
    name: str  # "platform", "cel", "kyverno"
    kinds: tuple[PolicyKind, ...]  # the documents it owns

    def compile(self, documents: Sequence[Document], env: CompileEnv) -> FamilyResult:
        """Sees all of its documents at once (in load order), schema-checked when its kind has a schema."""


class SchemaValidator:
    """A kind's schema and its jsonschema validator, made on first use (jsonschema is imported then)."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema = schema
        self._validator: Draft202012Validator | None = None

    def is_valid(self, document: Any) -> bool:
        return bool(self.validator.is_valid(document))

    @property
    def validator(self) -> "Draft202012Validator":
        if self._validator is None:
            from jsonschema import Draft202012Validator

            self._validator = Draft202012Validator(self.schema)
        return self._validator


_VALIDATORS: dict[int, SchemaValidator] = {}


def _validator(schema: Mapping[str, Any]) -> SchemaValidator:
    """One validator per schema and process (`test` builds a registry per suite). The schemas themselves are
    module constants, checked against the metaschema by tests/policy/test_schemas.py rather than at every
    start: that check alone was a large part of each `apply`."""
    cached = _VALIDATORS.get(id(schema))
    if cached is None or cached.schema is not schema:
        cached = _VALIDATORS[id(schema)] = SchemaValidator(schema)
    return cached


class LazyFamily:
    """A family imported the first time the registry meets a document of one of its API groups.

    The CEL and Kyverno families are slow to import: `apply` with the platform policies alone never
    needs them. `groups` must cover every kind the family declares; resolving checks that."""

    def __init__(self, name: str, groups: Iterable[str], load: Callable[[], PolicyFamily]) -> None:
        self.name = name
        self.groups = frozenset(groups)
        self._load = load
        self._family: PolicyFamily | None = None

    def resolve(self) -> PolicyFamily:
        if self._family is None:
            family = self._load()
            outside = sorted({k.api_version.split("/")[0] for k in family.kinds} - self.groups)
            if family.name != self.name or outside:
                raise ValueError(f"lazy policy family {self.name} (groups {sorted(self.groups)}) loaded family "
                                 f"{family.name} with kinds of groups {outside}")
            self._family = family
        return self._family

    @property
    def kinds(self) -> tuple[PolicyKind, ...]:
        return tuple(self.resolve().kinds)

    def compile(self, documents: Sequence[Document], env: CompileEnv) -> FamilyResult:
        return self.resolve().compile(documents, env)


class FamilyRegistry:
    """Which family owns which (apiVersion, kind); a kind claimed twice is a programming error."""

    def __init__(self, families: Iterable[PolicyFamily] = ()) -> None:
        self.families: list[PolicyFamily] = []
        self._owners: dict[tuple[str, str], tuple[PolicyFamily, PolicyKind]] = {}
        self._validators: dict[tuple[str, str], SchemaValidator] = {}
        self._lazy: dict[str, LazyFamily] = {}  # API group -> a family not imported yet
        self._resolving = threading.Lock()  # live mode asks owner() from informer threads too
        for family in families:
            self.register(family)

    def register(self, family: PolicyFamily) -> None:
        if isinstance(family, LazyFamily):
            for group in family.groups:
                if group in self._lazy:
                    raise ValueError(f"API group {group} is claimed by families {self._lazy[group].name} and {family.name}")
                self._lazy[group] = family
        else:
            self._claim(family, family.kinds)
        self.families.append(family)

    def _claim(self, family: PolicyFamily, kinds: Iterable[PolicyKind]) -> None:
        for kind in kinds:
            if kind.key in self._owners:
                raise ValueError(f"{kind.api_version} {kind.kind} is claimed by families "
                                 f"{self._owners[kind.key][0].name} and {family.name}")
            if kind.schema is not None:
                self._validators[kind.key] = _validator(kind.schema)
            self._owners[kind.key] = (family, kind)

    def _resolve(self, family: LazyFamily) -> None:
        with self._resolving:
            if any(lazy is family for lazy in self._lazy.values()):
                kinds = family.resolve().kinds
                self._lazy = {group: lazy for group, lazy in self._lazy.items() if lazy is not family}
                self._claim(family, kinds)

    def _resolve_all(self) -> None:
        for family in list(self._lazy.values()):
            self._resolve(family)

    def owner(self, api_version: str, kind: str) -> PolicyFamily | None:
        found = self._owners.get((api_version, kind))
        if found is None and self._lazy:
            lazy = self._lazy.get(api_version.split("/")[0])
            if lazy is not None:
                self._resolve(lazy)
                found = self._owners.get((api_version, kind))
        return found[0] if found else None

    def validator(self, api_version: str, kind: str) -> SchemaValidator | None:
        return self._validators.get((api_version, kind))

    def kinds(self) -> list[PolicyKind]:
        self._resolve_all()
        return [kind for family in self.families for kind in family.kinds]

    def known(self) -> list[str]:
        self._resolve_all()
        return sorted(f"{a} {k}" for a, k in self._owners)

    def unknown(self, api_version: str, kind: str) -> str:
        """Why (api_version, kind) is refused, in one short line: the kinds of its API group when the group
        has policies, else the groups that do (a Pod or a ConfigMap beside the policies is not one)."""
        group = api_version.split("/")[0] if "/" in api_version else ""
        if group and (group in self._lazy or any(a.split("/")[0] == group for a, _ in self._owners)):
            if group in self._lazy:  # only that group's family is imported to name its kinds
                self._resolve(self._lazy[group])
            kinds = sorted({f"{a} {k}" for a, k in self._owners if a.split("/")[0] == group})
            return f"unknown policy kind {api_version} {kind}; the {group} policy kinds: {', '.join(kinds)}"
        groups = sorted({a.split("/")[0] for a, _ in self._owners} | set(self._lazy))
        return (f"unknown policy kind {api_version} {kind}: not a policy (policies are of the API groups "
                f"{', '.join(groups)})")
