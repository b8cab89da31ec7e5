"""A minimal reader of Kyverno CLI test suites (kyverno-test.yaml) driving the family's engine directly.

It follows ``kyverno test``'s accounting: one row per expected (policy, rule, resource); a rule named X also
matches the responses ``autogen-X`` and ``autogen-cronjob-X``; a resource no rule responded to counts as passed
(excluded). Used to measure conformance of the engine itself; the product's runner is ``quartermaster test``.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from webhook.families.kyverno.compile import POLICY_KINDS, PolicyError, compile_policy
from webhook.families.kyverno.context import RequestData, Subject
from webhook.families.kyverno.engine import generate_rules, mutate_rules, validate_rules
from webhook.families.kyverno.outcome import RuleEnv


@dataclass(frozen=True)
class Row:
    suite: str
    policy: str
    rule: str
    resource: str
    expected: str
    ok: bool
    reason: str


def _docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


def _values(path: Path | None) -> dict:
    return _docs(path)[0] if path and path.exists() else {}


def _overrides(values: dict, policy: str, rule: str | None, resource: str) -> dict:
    merged: dict[str, Any] = dict(values.get("globalValues") or {})
    for pol in values.get("policies") or []:
        if pol.get("name") != policy:
            continue
        for r in pol.get("rules") or []:
            if rule is None or r.get("name") == rule:
                merged.update(r.get("values") or {})
        for res in pol.get("resources") or []:
            if res.get("name") == resource:
                merged.update(res.get("values") or {})
    return merged


def _namespace_object(values: dict, namespace: str) -> dict | None:
    for entry in values.get("namespaceSelector") or []:
        if entry.get("name") == namespace:
            return {"metadata": {"name": namespace, "labels": entry.get("labels") or {}}}
    return None


def _subject(test_dir: Path, test: dict) -> Subject:
    if not test.get("userinfo"):
        return Subject()
    info = _docs(test_dir / test["userinfo"])[0]
    user = info.get("userInfo") or {}
    return Subject(str(user.get("username", "")), tuple(user.get("groups") or ()),
                   tuple(info.get("roles") or ()), tuple(info.get("clusterRoles") or ()))


class _State:
    """Lookups over the suite's resources (cluster state for configMap/apiCall/clone in tests)."""

    def __init__(self, objects: list[dict]) -> None:
        self.objects = objects

    def get(self, api_version, kind, namespace, name):
        return next((o for o in self.objects if o.get("kind") == kind and o["metadata"].get("name") == name and
                     (o["metadata"].get("namespace") or "") == (namespace or "")), None)

    def list(self, api_version, kind, namespace="", selector=None):
        return [o for o in self.objects if o.get("kind") == kind and (
            not namespace or o["metadata"].get("namespace") == namespace)]

    def global_context(self, name):
        raise KeyError(name)

    def http(self, method, url, body=None):
        raise RuntimeError("http lookups are refused offline")

    def image_data(self, ref):
        raise RuntimeError("image registry lookups are refused offline")


def run_suite(test_file: Path, cel: Any) -> list[Row]:
    test_dir = test_file.parent
    test = _docs(test_file)[0]
    policies = {}
    for rel in test.get("policies") or []:
        for doc in _docs(test_dir / rel):
            if doc.get("kind") in POLICY_KINDS:
                try:
                    policies[doc["metadata"]["name"]] = compile_policy(doc, cel)
                except PolicyError as exc:
                    policies[doc["metadata"]["name"]] = exc
    resources = [_default_namespace(d) for rel in test.get("resources") or [] for d in _docs(test_dir / rel)]
    values = _values(test_dir / test["variables"]) if test.get("variables") else {}
    subject = _subject(test_dir, test)
    lookups = _State(resources)
    rows = []
    for expected in test.get("results") or []:
        names = expected.get("resources") or ([expected["resource"]] if expected.get("resource") else [])
        policy_name = str(expected.get("policy", "")).split("/")[-1]
        for name in names:
            rows.append(_check(test_file, test_dir, expected, policy_name, name, policies.get(policy_name),
                               resources, values, subject, lookups, cel))
    return rows


CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "Node", "PersistentVolume", "StorageClass",
                  "CustomResourceDefinition", "PriorityClass", "IngressClass", "ValidatingWebhookConfiguration",
                  "MutatingWebhookConfiguration", "ClusterPolicy", "RuntimeClass", "CSIDriver"}


def _default_namespace(resource: dict) -> dict:
    """kyverno test places namespaced resources without a namespace in "default"."""
    meta = resource.setdefault("metadata", {})
    if resource.get("kind") not in CLUSTER_SCOPED and not meta.get("namespace"):
        meta["namespace"] = "default"
    return resource


def _find(resources: list[dict], kind: str | None, name: str) -> dict | None:
    namespace, _, name = name.rpartition("/")
    return next((r for r in resources if (r.get("metadata") or {}).get("name") == name and
                 (not kind or r.get("kind") == kind) and
                 (not namespace or ((r.get("metadata") or {}).get("namespace") or "default") == namespace)), None)


def _check(test_file, test_dir, expected, policy_name, name, policy, resources, values, subject, lookups,
           cel) -> Row:
    want = expected.get("result")
    row = lambda ok, reason: Row(str(test_file), policy_name, expected.get("rule", ""), name, want, ok, reason)  # noqa: E731
    if isinstance(policy, Exception) or policy is None:
        return row(False, f"policy not loaded: {policy}")
    resource = _find(resources, expected.get("kind"), name)
    if resource is None:
        return row(False, "resource not found")
    overrides = _overrides(values, policy_name, None, name.rpartition("/")[2])
    operation = str(overrides.pop("request.operation", "CREATE"))
    meta = resource.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    env = RuleEnv(lookups=lookups, overrides=overrides, cel=cel, namespace_object=_namespace_object(values, namespace))
    api_version = str(resource.get("apiVersion", ""))
    group, _, version = api_version.rpartition("/")
    request = RequestData(operation=operation, object=resource if operation != "DELETE" else None,
                          old_object=resource if operation in ("DELETE", "UPDATE") else None, subject=subject,
                          kind={"group": group, "version": version, "kind": resource.get("kind", "")},
                          namespace=namespace, name=meta.get("name", ""), overrides=overrides)
    mutation = mutate_rules(policy.rules, request, env, policy.apply_one)
    patched_request = RequestData(**{**request.__dict__, "object": mutation.resource if operation != "DELETE" else None})
    outcomes = mutation.outcomes + validate_rules(policy.rules, patched_request, env, policy.apply_one)
    outcomes += generate_rules(policy.rules, patched_request, env)
    rule = expected.get("rule", "")
    relevant = [o for o in outcomes if not rule or o.rule in (rule, f"autogen-{rule}", f"autogen-cronjob-{rule}")]
    if not relevant:
        return row(True, "excluded")
    for outcome in relevant:
        if outcome.kind == "mutate" and expected.get("patchedResources"):
            wanted = _find(_docs(test_dir / expected["patchedResources"]), resource.get("kind"), name)
            if wanted is not None and not _same(wanted, mutation.resource):
                return row(False, f"patched resource differs: {outcome.status} {outcome.message}")
        if outcome.kind == "generate" and expected.get("generatedResource"):
            wanted = _docs(test_dir / expected["generatedResource"])[0]
            if not any(_same(wanted, g) for g in outcome.generated):
                return row(False, f"generated resource differs ({len(outcome.generated)} generated)")
        if outcome.status != want:
            return row(False, f"want {want}, got {outcome.status}: {outcome.message[:200]}")
    return row(True, "ok")


def _same(expected: dict, actual: dict) -> bool:
    import copy
    return _strip(_default_namespace(copy.deepcopy(expected))) == _strip(_default_namespace(copy.deepcopy(actual)))


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def run_categories(root: Path, categories: list[str], cel: Any) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = collections.OrderedDict()
    for category in categories:
        rows: list[Row] = []
        for test_file in sorted((root / category).rglob("kyverno-test.yaml")):
            rows.extend(run_suite(test_file, cel))
        out[category] = rows
    return out
