"""Find and read Kyverno test suites: `kyverno-test.yaml` anywhere below a path (`.kyverno-test/` included)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Iterator, Mapping

import yaml

from webhook.model import boundedyaml
from webhook.model.apiresources import is_namespaced
from webhook.policy.cli_values import Values, ValuesError, fold, read_values_file
from webhook.testsuite.model import SUPPORTED, ExpectedResult, Suite, SuiteError

TEST_FILE = "kyverno-test.yaml"


class Unreadable(Exception):
    """A path given on the command line cannot be read at all (exit 2)."""


def discover(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for name in paths:
        path = Path(name)
        if not path.exists():
            raise Unreadable(f"{name}: no such file or directory")
        if path.is_file():
            found.append(path)
            continue
        found.extend(sorted(p for p in path.rglob(TEST_FILE) if p.is_file()))
    return found


def _strings(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(dict.fromkeys(str(v) for v in value))  # the Kyverno CLI drops duplicates


def read_suites(path: Path) -> list[Suite]:
    """Every suite document of a test file; a file that cannot be parsed is one suite carrying the error."""
    try:
        docs = [d for d in boundedyaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
    except (OSError, UnicodeDecodeError) as exc:
        raise Unreadable(f"{path}: cannot read: {exc}") from None
    except yaml.YAMLError as exc:
        line, problem = boundedyaml.yaml_problem(exc)
        where = f"{path}:{line}" if line else str(path)
        return [Suite(path, path.parent.name, (), (), (), error=f"{where}: invalid YAML: {problem}")]
    suites = []
    for index, doc in enumerate(docs):
        try:
            suites.append(_suite(path, index, doc))
        except SuiteError as exc:
            suites.append(Suite(path, path.parent.name, (), (), (), error=str(exc)))
        except (TypeError, ValueError, AttributeError) as exc:  # a field of the wrong shape
            suites.append(Suite(path, path.parent.name, (), (), (),
                                error=f"{path} document {index}: malformed test suite ({type(exc).__name__}: {exc})"))
    return suites


def _suite(path: Path, index: int, doc: Any) -> Suite:
    where = f"{path} document {index}"
    data = fold(doc)
    if not data:
        raise SuiteError(f"{where}: a test suite must be a mapping")
    results = tuple(ExpectedResult.parse(i, r, where) for i, r in enumerate(data.get("results") or []))
    name = str(fold(data.get("metadata")).get("name") or data.get("name") or path.parent.name)
    values = Values()
    try:
        if data.get("values") is not None:
            values = Values.parse(data["values"], f"{where}: values")
        elif data.get("variables"):
            values = read_values_file(path.parent / str(data["variables"]), f"{where}: variables")
    except ValuesError as exc:
        raise SuiteError(str(exc)) from None
    unsupported = tuple(sorted(k for k, v in data.items() if k not in SUPPORTED and v))
    return Suite(
        path=path, name=name, policies=_strings(data.get("policies")), resources=_strings(data.get("resources")),
        results=results, values=values, userinfo=str(data.get("userinfo") or ""),
        exceptions=_strings(data.get("exceptions")), context=str(data.get("context") or ""),
        param_resources=_strings(data.get("paramresources")) + _strings(data.get("targetresources")),
        cluster_resources=_strings(data.get("clusterresources")),
        api_calls=tuple(data.get("apicallresponses") or ()), global_entries=tuple(data.get("globalcontextentries") or ()),
        unsupported=unsupported,
    )


def _load_yaml_mapping(path: Path, what: str) -> Mapping[str, Any]:
    try:
        data = boundedyaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SuiteError(f"{what}: cannot read {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise SuiteError(f"{what}: {path} is not valid YAML: {exc}") from None
    if not isinstance(data, Mapping):
        raise SuiteError(f"{what}: {path} must hold a mapping")
    return data


def load_userinfo(suite: Suite) -> Mapping[str, Any]:
    """Kyverno's RequestInfo: {roles, clusterRoles, userInfo: {username, groups, uid, extra}}."""
    if not suite.userinfo:
        return {}
    return fold(_load_yaml_mapping(suite.resolve(suite.userinfo), f"{suite.path}: userinfo"))


def load_context(suite: Suite) -> tuple[list[dict[str, Any]], dict[str, Mapping[str, Any]]]:
    """A Kyverno CLI `Context` file: objects for resource lookups, image metadata by image reference."""
    if not suite.context:
        return [], {}
    spec = fold(fold(_load_yaml_mapping(suite.resolve(suite.context), f"{suite.path}: context")).get("spec"))
    objects = [_defaulted(r) for r in spec.get("resources") or [] if isinstance(r, Mapping)]
    images: dict[str, Mapping[str, Any]] = {}
    for raw in spec.get("images") or []:
        entry = fold(raw)
        if entry.get("image"):
            images[str(entry["image"])] = {k: v for k, v in raw.items() if k != "image"}
    return objects, images


def _defaulted(resource: Mapping[str, Any]) -> dict[str, Any]:
    """A namespaced object without a namespace is in `default`, as the Kyverno CLI (and kubectl) put it."""
    obj = copy.deepcopy(dict(resource))
    meta = obj.setdefault("metadata", {}) if isinstance(obj.get("metadata", {}), dict) else {}
    if not meta.get("namespace") and is_namespaced(str(obj.get("apiVersion", "")), str(obj.get("kind", ""))):
        meta["namespace"] = "default"
    for key in ("annotations", "labels"):
        if key in meta and meta[key] is None:
            meta[key] = {}
    return obj


def read_objects(suite: Suite, names: tuple[str, ...], what: str) -> list[dict[str, Any]]:
    """Resources of the suite's files, namespace-defaulted, duplicates (same identity) dropped."""
    out: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for name in names:
        for obj in _objects_of(suite.resolve(name), f"{suite.path}: {what} {name}"):
            meta = obj.get("metadata") or {}
            key = (str(obj.get("apiVersion")), str(obj.get("kind")), str(meta.get("namespace", "")), str(meta.get("name", "")))
            out.setdefault(key, obj)
    return list(out.values())


def _objects_of(path: Path, what: str) -> Iterator[dict[str, Any]]:
    try:
        docs = boundedyaml.safe_load_all(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SuiteError(f"{what}: cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise SuiteError(f"{what}: invalid YAML: {exc}") from None
    for index, doc in enumerate(docs):
        if doc is None:
            continue
        items = doc.get("items") if isinstance(doc, Mapping) and str(doc.get("kind", "")).endswith("List") else [doc]
        for item in items or []:
            if not isinstance(item, Mapping) or not item.get("kind") or not item.get("apiVersion"):
                raise SuiteError(f"{what} document {index}: a resource needs apiVersion and kind")
            yield _defaulted(item)


def read_expected(path: Path) -> list[dict[str, Any]]:
    """The objects of a patchedResource/generatedResource file, defaulted like the resources they stand for."""
    return list(_objects_of(path, str(path)))
