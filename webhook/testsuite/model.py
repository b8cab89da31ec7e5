"""Kyverno CLI test suites (`cli.kyverno.io/v1alpha1` Test, and the older un-versioned format) as data.

Field names are matched case-insensitively, as Go's JSON decoding (which the Kyverno CLI uses) does:
suites in the wild spell `isMUtatingPolicy`. Unknown fields are kept out, never guessed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from webhook.model.quickinit import frozen_dataclass
from webhook.policy.cli_values import Values, fold

RESULTS = ("pass", "fail", "skip", "warn", "error")
# the Test fields this runner understands; anything else in a suite fails its results with a reason
SUPPORTED = {"apiversion", "kind", "metadata", "name", "policies", "resources", "variables", "values", "userinfo",
             "results", "exceptions", "context", "paramresources", "targetresources", "clusterresources",
             "apicallresponses", "globalcontextentries"}
FLAGS = ("isValidatingPolicy", "isMutatingPolicy", "isGeneratingPolicy", "isValidatingAdmissionPolicy",
         "isMutatingAdmissionPolicy", "isDeletingPolicy", "isImageValidatingPolicy")


class SuiteError(Exception):
    """The suite cannot be run as written; the message names the file and the field."""


@frozen_dataclass
class ExpectedResult:
    index: int
    policy: str  # "name" or "namespace/name"
    rule: str
    resources: tuple[str, ...]  # "name" or "namespace/name"
    kind: str
    result: str
    operation: str = ""
    patched_resource: str = ""
    generated_resources: tuple[str, ...] = ()
    clone_source_resource: str = ""
    flags: frozenset[str] = frozenset()  # which is*Policy flags are set
    fail_on_missing: bool = False

    @property
    def policy_name(self) -> str:
        return self.policy.rsplit("/", 1)[-1]

    @classmethod
    def parse(cls, index: int, raw: Any, where: str) -> "ExpectedResult":
        data = fold(raw)
        if not data:
            raise SuiteError(f"{where}: results[{index}] must be a mapping")
        result = str(data.get("result", data.get("status", ""))).lower()
        if result not in RESULTS:
            raise SuiteError(f"{where}: results[{index}].result must be one of {', '.join(RESULTS)}, got {result!r}")
        resources = data.get("resources")
        if resources is None and data.get("resource"):  # the older format: one resource and its namespace
            name = str(data["resource"])
            resources = [f"{data['namespace']}/{name}" if data.get("namespace") else name]
        generated = [str(g) for g in data.get("generatedresources") or []]
        if data.get("generatedresource"):
            generated.insert(0, str(data["generatedresource"]))
        return cls(
            index=index, policy=str(data.get("policy", "")), rule=str(data.get("rule", "") or ""),
            resources=tuple(str(r) for r in resources or []), kind=str(data.get("kind", "") or ""), result=result,
            operation=str(data.get("operation", "") or "").upper(),
            patched_resource=str(data.get("patchedresources") or data.get("patchedresource") or ""),
            generated_resources=tuple(generated),
            clone_source_resource=str(data.get("clonesourceresource") or ""),
            flags=frozenset(f for f in FLAGS if data.get(f.lower()) is True),
            fail_on_missing=data.get("failonmissingresources") is True,
        )


@frozen_dataclass
class Suite:
    path: Path
    name: str
    policies: tuple[str, ...]
    resources: tuple[str, ...]
    results: tuple[ExpectedResult, ...]
    values: Values = Values()
    userinfo: str = ""
    exceptions: tuple[str, ...] = ()
    context: str = ""
    param_resources: tuple[str, ...] = ()
    cluster_resources: tuple[str, ...] = ()
    api_calls: tuple[Any, ...] = ()  # apiCallResponses, as written
    global_entries: tuple[Any, ...] = ()  # globalContextEntries, as written
    unsupported: tuple[str, ...] = ()  # fields this runner cannot honour: their results fail, naming them
    error: str = ""  # the suite could not be read: every result fails with this

    @property
    def directory(self) -> Path:
        return self.path.parent

    def resolve(self, name: str) -> Path:
        return (self.directory / name).resolve() if not Path(name).is_absolute() else Path(name)
