"""A policy family: the unit of extension (the platform batteries, CEL admission policies, Kyverno policies).

A family owns some document kinds (apiVersion + kind), brings their schemas, and compiles ALL of its
documents at once, so bindings, params and exceptions can join their policies. The composition root
(webhook/app.py) registers the families; this package never imports one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Protocol, Sequence

from jsonschema import Draft202012Validator

from webhook.cel import CelCompiler
from webhook.model.errors import PolicyLoadError
from webhook.model.policy import CompiledPolicy
from webhook.policy.documents import Document


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class CompileEnv:
    cel: CelCompiler


@dataclass(frozen=True)
class FamilyResult:
    policies: tuple[CompiledPolicy, ...]  # broken ones carry .error
    errors: tuple[PolicyLoadError, ...] = ()  # set-level errors: these refuse the whole load


class PolicyFamily(Protocol):
    name: str  # "platform", "cel", "kyverno"
    kinds: tuple[PolicyKind, ...]  # the documents it owns

    def compile(self, documents: Sequence[Document], env: CompileEnv) -> FamilyResult:
        """Sees all of its documents at once (in load order), schema-checked when its kind has a schema."""


_VALIDATORS: dict[int, tuple[Mapping[str, Any], Draft202012Validator]] = {}


def _validator(schema: Mapping[str, Any]) -> Draft202012Validator:
    """One validator per schema and process (`test` builds a registry per suite). The schemas themselves are
    module constants, checked against the metaschema by tests/policy/test_schemas.py rather than at every
    start: that check alone cost ~0.1 s of each `apply`."""
    cached = _VALIDATORS.get(id(schema))
    if cached is None or cached[0] is not schema:
        cached = _VALIDATORS[id(schema)] = (schema, Draft202012Validator(schema))
    return cached[1]


class FamilyRegistry:
    """Which family owns which (apiVersion, kind); a kind claimed twice is a programming error."""

    def __init__(self, families: Iterable[PolicyFamily] = ()) -> None:
        self.families: list[PolicyFamily] = []
        self._owners: dict[tuple[str, str], tuple[PolicyFamily, PolicyKind]] = {}
        self._validators: dict[tuple[str, str], Draft202012Validator] = {}
        for family in families:
            self.register(family)

    def register(self, family: PolicyFamily) -> None:
        for kind in family.kinds:
            if kind.key in self._owners:
                raise ValueError(f"{kind.api_version} {kind.kind} is claimed by families "
                                 f"{self._owners[kind.key][0].name} and {family.name}")
            if kind.schema is not None:
                self._validators[kind.key] = _validator(kind.schema)
            self._owners[kind.key] = (family, kind)
        self.families.append(family)

    def owner(self, api_version: str, kind: str) -> PolicyFamily | None:
        found = self._owners.get((api_version, kind))
        return found[0] if found else None

    def validator(self, api_version: str, kind: str) -> Draft202012Validator | None:
        return self._validators.get((api_version, kind))

    def kinds(self) -> list[PolicyKind]:
        return [kind for _, kind in self._owners.values()]

    def known(self) -> list[str]:
        return sorted(f"{a} {k}" for a, k in self._owners)
