"""Kyverno ``generate`` rules: ``data`` (substituted) or ``clone``/``cloneList`` from cluster state.

The objects are returned, never written here: the caller records them (apply/test) or creates them through the
API after admission (live mode), labelled the way Kyverno labels what it generates.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

from webhook.model.policy_scope import generation_refusal
from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Outcome

from .rule_env import RuleEnv
from .rule_types import Generated, RuleRef
from .variables import JsonContext, SubstitutionError, has_variables, substitute_all

LABELS = ("generate.kyverno.io/policy-name", "generate.kyverno.io/rule-name")


def _checked(ref: RuleRef, env: RuleEnv, made: Generated) -> Generated:
    """The objects as they would be created, refused where the policy may not create them: the namespace may
    come from a variable or from `data` itself."""
    refusal = next(filter(None, (generation_refusal(o, env.policy_namespace) for o in made.objects)), None)
    if refusal is not None:
        return Generated(ref.result(Outcome.ERROR, refusal))
    return made


@frozen_dataclass
class _Spec:
    """generate without its foreach, as written; substituted per request unless it has no variable."""

    value: Mapping[str, Any]
    static: bool

    def render(self, ref: RuleRef, ctx: JsonContext) -> Mapping[str, Any] | Generated:
        if self.static:
            return self.value
        try:
            return substitute_all(dict(self.value), ctx)  # type: ignore[no-any-return]
        except SubstitutionError as exc:
            return Generated(ref.result(Outcome.ERROR, f"variable substitution failed: {exc}"))


def spec_of(generate: Mapping[str, Any]) -> _Spec:
    value = {k: v for k, v in generate.items() if k != "foreach"}
    return _Spec(value, not has_variables(value))


@frozen_dataclass
class DataGeneration:
    """generate.data, or nothing at all: Kyverno then creates the bare object (apiVersion, kind, name,
    namespace)."""

    spec: _Spec

    def generate(self, ref: RuleRef, ctx: JsonContext, env: RuleEnv) -> Generated:
        spec = self.spec.render(ref, ctx)
        if isinstance(spec, Generated):
            return spec
        obj = copy.deepcopy(spec["data"]) if isinstance(spec.get("data"), dict) else {}
        return _checked(ref, env, Generated(ref.result(Outcome.PASS, "generated"), (_identify(obj, spec),)))


@frozen_dataclass
class CloneGeneration:
    """generate.clone (one source object) or generate.cloneList (every object of the kinds it names)."""

    spec: _Spec
    listed: bool = False   # cloneList

    def generate(self, ref: RuleRef, ctx: JsonContext, env: RuleEnv) -> Generated:
        spec = self.spec.render(ref, ctx)
        if isinstance(spec, Generated):
            return spec
        return _checked(ref, env, (_clone_list if self.listed else _clone)(ref, spec, env))


def _identify(obj: dict, spec: Mapping[str, Any]) -> dict:
    obj.setdefault("apiVersion", spec.get("apiVersion"))
    obj.setdefault("kind", spec.get("kind"))
    meta = obj.setdefault("metadata", {})
    meta["name"] = spec.get("name") or meta.get("name")
    if spec.get("namespace"):
        meta["namespace"] = spec["namespace"]
    return obj


def _clone(ref: RuleRef, spec: Mapping[str, Any], env: RuleEnv) -> Generated:
    source = spec["clone"]
    if env.lookups is None:
        return Generated(ref.result(Outcome.ERROR, "clone needs cluster state"))
    found = env.lookups.get(str(spec.get("apiVersion")), str(spec.get("kind")), str(source.get("namespace") or ""),
                            str(source.get("name")))
    if found is None:
        return Generated(ref.result(Outcome.ERROR, f"source {spec.get('kind')} {source.get('namespace')}/"
                                                   f"{source.get('name')} not found"))
    obj = copy.deepcopy(dict(found))
    meta = obj.setdefault("metadata", {})
    for key in ("resourceVersion", "uid", "creationTimestamp", "managedFields", "ownerReferences"):
        meta.pop(key, None)
    return Generated(ref.result(Outcome.PASS, "cloned"), (_identify(obj, spec),))


def _clone_list(ref: RuleRef, spec: Mapping[str, Any], env: RuleEnv) -> Generated:
    source = spec["cloneList"]
    if env.lookups is None:
        return Generated(ref.result(Outcome.ERROR, "cloneList needs cluster state"))
    objects = []
    for kind_ref in source.get("kinds") or []:
        api_version, _, kind = str(kind_ref).rpartition("/")
        for item in env.lookups.list(api_version or "v1", kind, str(source.get("namespace") or ""),
                                     source.get("selector")):
            obj = copy.deepcopy(dict(item))
            obj.setdefault("metadata", {})["namespace"] = spec.get("namespace")
            objects.append(obj)
    return Generated(ref.result(Outcome.PASS, "cloned"), tuple(objects))
