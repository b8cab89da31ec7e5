"""The registry of policy kinds: each brings a JSON schema and a compiler.

Kinds are registered by the composition root (app.py), so this package never imports the batteries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from jsonschema import Draft202012Validator

from webhook.cel import CelCompiler
from webhook.model.policy import CompiledPolicy, SourceRef

Compile = Callable[[Mapping[str, Any], SourceRef, CelCompiler], CompiledPolicy]


@dataclass(frozen=True)
class PolicyKind:
    api_version: str
    kind: str
    schema: Mapping[str, Any]  # JSON Schema of the whole document; the Helm chart's CRD schema derives from it
    compile: Compile

    @property
    def key(self) -> tuple[str, str]:
        return (self.api_version, self.kind)


class KindRegistry:
    def __init__(self, kinds: Iterable[PolicyKind] = ()) -> None:
        self._kinds: dict[tuple[str, str], PolicyKind] = {}
        self._validators: dict[tuple[str, str], Draft202012Validator] = {}
        for kind in kinds:
            self.register(kind)

    def register(self, kind: PolicyKind) -> None:
        Draft202012Validator.check_schema(kind.schema)
        self._kinds[kind.key] = kind
        self._validators[kind.key] = Draft202012Validator(kind.schema)

    def lookup(self, api_version: str, kind: str) -> PolicyKind | None:
        return self._kinds.get((api_version, kind))

    def validator(self, kind: PolicyKind) -> Draft202012Validator:
        return self._validators[kind.key]

    def known(self) -> list[str]:
        return sorted(f"{a} {k}" for a, k in self._kinds)

    def __iter__(self):
        return iter(self._kinds.values())
