"""Kyverno ``generate`` rules: ``data`` (substituted) or ``clone``/``cloneList`` from cluster state.

The objects are returned, never written here: the caller records them (apply/test) or creates them through the
API after admission (live mode), labelled the way Kyverno labels what it generates.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

from .context import RequestData
from .outcome import ERROR, PASS, Outcome, RuleEnv
from .variables import Context, SubstitutionError, substitute_all

from webhook.model.policy_scope import generation_refusal

LABELS = ("generate.kyverno.io/policy-name", "generate.kyverno.io/rule-name")


def generate_objects(spec: Mapping[str, Any], ctx: Context, env: RuleEnv,
                     request: RequestData) -> tuple[Outcome, tuple[Mapping[str, Any], ...]]:
    try:
        spec = substitute_all({k: v for k, v in spec.items() if k != "foreach"}, ctx)
    except SubstitutionError as exc:
        return Outcome(ERROR, f"variable substitution failed: {exc}"), ()
    if spec.get("clone"):
        outcome, objects = _clone(spec, env)
    elif spec.get("cloneList"):
        outcome, objects = _clone_list(spec, env)
    else:
        # data, or nothing at all: Kyverno then creates the bare object (apiVersion, kind, name, namespace)
        obj = copy.deepcopy(spec["data"]) if isinstance(spec.get("data"), dict) else {}
        outcome, objects = Outcome(PASS, "generated"), (_identify(obj, spec),)
    # checked on the objects as created: the namespace may come from a variable or from `data` itself
    refusal = next(filter(None, (generation_refusal(o, env.policy_namespace) for o in objects)), None)
    if refusal is not None:
        return Outcome(ERROR, refusal), ()
    return outcome, objects


def _identify(obj: dict, spec: Mapping[str, Any]) -> dict:
    obj.setdefault("apiVersion", spec.get("apiVersion"))
    obj.setdefault("kind", spec.get("kind"))
    meta = obj.setdefault("metadata", {})
    meta["name"] = spec.get("name") or meta.get("name")
    if spec.get("namespace"):
        meta["namespace"] = spec["namespace"]
    return obj


def _clone(spec: Mapping[str, Any], env: RuleEnv) -> tuple[Outcome, tuple[Mapping[str, Any], ...]]:
    source = spec["clone"]
    if env.lookups is None:
        return Outcome(ERROR, "clone needs cluster state"), ()
    found = env.lookups.get(str(spec.get("apiVersion")), str(spec.get("kind")), str(source.get("namespace") or ""),
                            str(source.get("name")))
    if found is None:
        return Outcome(ERROR, f"source {spec.get('kind')} {source.get('namespace')}/{source.get('name')} not found"), ()
    obj = copy.deepcopy(dict(found))
    meta = obj.setdefault("metadata", {})
    for key in ("resourceVersion", "uid", "creationTimestamp", "managedFields", "ownerReferences"):
        meta.pop(key, None)
    return Outcome(PASS, "cloned"), (_identify(obj, spec),)


def _clone_list(spec: Mapping[str, Any], env: RuleEnv) -> tuple[Outcome, tuple[Mapping[str, Any], ...]]:
    source = spec["cloneList"]
    if env.lookups is None:
        return Outcome(ERROR, "cloneList needs cluster state"), ()
    objects = []
    for kind_ref in source.get("kinds") or []:
        api_version, _, kind = str(kind_ref).rpartition("/")
        for item in env.lookups.list(api_version or "v1", kind, str(source.get("namespace") or ""),
                                     source.get("selector")):
            obj = copy.deepcopy(dict(item))
            obj.setdefault("metadata", {})["namespace"] = spec.get("namespace")
            objects.append(obj)
    return Outcome(PASS, "cloned"), tuple(objects)
