"""Kyverno autogen (pkg/autogen/v1): Pod rules also apply to the controllers that template Pods.

For a policy whose rules match Pods, Kyverno adds ``autogen-<rule>`` (DaemonSet, Deployment, Job, StatefulSet,
ReplicaSet, ReplicationController; the pattern moves under ``spec.template``) and ``autogen-cronjob-<rule>``
(CronJob; under ``spec.jobTemplate.spec.template``). Variables and CEL paths into the Pod are rewritten the same
way. The ``pod-policies.kyverno.io/autogen-controllers`` annotation picks the controllers ("none" disables).
"""

from __future__ import annotations

import copy
import json

ANNOTATION = "pod-policies.kyverno.io/autogen-controllers"
CONTROLLERS = ("DaemonSet", "Deployment", "Job", "StatefulSet", "ReplicaSet", "ReplicationController", "CronJob")
_NON_CRON = ("DaemonSet", "Deployment", "Job", "StatefulSet", "ReplicaSet", "ReplicationController")
_GVK = {"DaemonSet": "apps/v1/DaemonSet", "Deployment": "apps/v1/Deployment", "Job": "batch/v1/Job",
        "StatefulSet": "apps/v1/StatefulSet", "ReplicaSet": "apps/v1/ReplicaSet",
        "ReplicationController": "v1/ReplicationController", "CronJob": "batch/v1/CronJob"}

_POD = [("request.object.spec", "request.object.spec.template.spec"),
        ("request.oldObject.spec", "request.oldObject.spec.template.spec"),
        ("request.object.metadata", "request.object.spec.template.metadata"),
        ("request.oldObject.metadata", "request.oldObject.spec.template.metadata")]
_CRON = [(a, b.replace("spec.template.", "spec.jobTemplate.spec.template.")) for a, b in _POD]
_POD_CEL = [("object.spec", "object.spec.template.spec"), ("oldObject.spec", "oldObject.spec.template.spec"),
            ("object.metadata", "object.spec.template.metadata"),
            ("oldObject.metadata", "oldObject.spec.template.metadata")]
_CRON_CEL = [(a, b.replace("spec.template.", "spec.jobTemplate.spec.template.")) for a, b in _POD_CEL]



def contains_kind(kinds: list[str], kind: str) -> bool:
    return any(_bare_kind(k) == kind for k in kinds or [])


def _bare_kind(entry: str) -> str:
    parts = entry.split("/")
    if len(parts) == 1:
        return parts[0]
    if parts[0][:1].isupper():          # Kind/subresource
        return parts[0]
    if len(parts) >= 3 and parts[-2][:1].isupper():   # group/version/Kind/subresource
        return parts[-2]
    return parts[-1]                      # version/Kind or group/version/Kind


def _filters(block: dict | None) -> list[dict]:
    if not block:
        return []
    found = [f.get("resources") or {} for f in (block.get("any") or []) + (block.get("all") or [])]
    if block.get("resources"):
        found.append(block["resources"])
    return found


def _kinds(block: dict | None) -> list[str]:
    return [k for resources in _filters(block) for k in resources.get("kinds") or []]


def _supported(resources: dict) -> bool:
    kinds = resources.get("kinds") or []
    if resources.get("name") or resources.get("names") or resources.get("selector") is not None:
        return False
    if resources.get("annotations") is not None:
        return False
    return not (len(kinds) > 1 and contains_kind(kinds, "Pod"))


def desired_controllers(spec: dict) -> tuple[str, ...]:
    """Kyverno's CanAutoGen: no autogen when a rule generates, uses JSON patches, or names/selects resources."""
    needed = False
    for rule in spec.get("rules") or []:
        mutate = rule.get("mutate") or {}
        if rule.get("generate") or mutate.get("patchesJson6902") or any(
                f.get("patchesJson6902") for f in mutate.get("foreach") or []):
            return ()
        for resources in _filters(rule.get("match")) + _filters(rule.get("exclude")):
            if not _supported(resources):
                return ()
            needed = needed or any(_bare_kind(k) in CONTROLLERS + ("Pod",) for k in resources.get("kinds") or [])
    return CONTROLLERS if needed else ()


def expand_rules(policy: dict) -> list[dict]:
    """The policy's rules followed by the rules Kyverno generates for pod controllers."""
    spec = policy.get("spec") or {}
    rules = list(spec.get("rules") or [])
    desired = desired_controllers(spec)
    annotation = ((policy.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
    controllers = desired if not desired or annotation is None else tuple(annotation.split(","))
    if not controllers or controllers == ("none",):
        return rules
    generated: list[dict] = []
    names = ",".join(controllers)
    for rule in rules:
        if rule.get("name", "").startswith("autogen-"):
            continue
        pod_rule = _for_controllers(rule, _strip_cron(names))
        if pod_rule is not None:
            generated.append(_rewrite(pod_rule, "pod"))
        if "CronJob" in names or "all" in names:
            cron_rule = _for_cronjob(rule, names)
            if cron_rule is not None:
                generated.append(_rewrite(cron_rule, "cron"))
    if not generated:
        return rules
    return [r for r in rules if not r.get("name", "").startswith("autogen-")] + generated


def _strip_cron(controllers: str) -> str:
    return ",".join(c for c in sorted(controllers.split(",")) if c != "CronJob")


def _for_controllers(rule: dict, controllers: str) -> dict | None:
    if rule.get("name", "").startswith("autogen-") or not controllers:
        return None
    exclude_kinds = _kinds(rule.get("exclude"))
    if not contains_kind(_kinds(rule.get("match")), "Pod") or (exclude_kinds and not contains_kind(exclude_kinds, "Pod")):
        return None
    if controllers == "all":
        kinds = list(_NON_CRON)
    else:
        valid = [c for c in controllers.split(",") if c in _NON_CRON]
        kinds = valid or controllers.split(",")
    return _generate(_name("autogen", rule["name"]), rule, "template", sorted(kinds), only_pod=True)


def _for_cronjob(rule: dict, controllers: str) -> dict | None:
    base = _for_controllers(rule, controllers)
    if base is None:
        return None
    return _generate(_name("autogen-cronjob", rule["name"]), base, "jobTemplate", ["CronJob"], only_pod=False)


def _name(prefix: str, name: str) -> str:
    return f"{prefix}-{name}"[:63]


def _retarget(filters: list[dict], kinds: list[str], only_pod: bool) -> list[dict]:
    out = copy.deepcopy(filters)
    for entry in out:
        resources = entry.setdefault("resources", {})
        if not only_pod or contains_kind(resources.get("kinds") or [], "Pod"):
            resources["kinds"] = [_GVK.get(k, k) for k in kinds]
    return out


def _retarget_block(block: dict, kinds: list[str], only_pod: bool, legacy_always: bool) -> dict:
    block = copy.deepcopy(block)
    if block.get("any"):
        block["any"] = _retarget(block["any"], kinds, only_pod)
    elif block.get("all"):
        block["all"] = _retarget(block["all"], kinds, only_pod)
    elif legacy_always or (block.get("resources") or {}).get("kinds"):
        block.setdefault("resources", {})["kinds"] = [_GVK.get(k, k) for k in kinds]
    return block


def _generate(name: str, rule: dict, key: str, kinds: list[str], only_pod: bool) -> dict | None:
    rule = copy.deepcopy(rule)
    rule["name"] = name
    rule["match"] = _retarget_block(rule.get("match") or {}, kinds, only_pod, True)
    if rule.get("exclude"):
        rule["exclude"] = _retarget_block(rule["exclude"], kinds, only_pod, False)
    wrap = lambda value: {"spec": {key: value}}  # noqa: E731 - tiny local helper
    mutate, validate = rule.get("mutate"), rule.get("validate")
    if mutate:
        if mutate.get("patchStrategicMerge") is not None:
            rule["mutate"] = {"patchStrategicMerge": wrap(mutate["patchStrategicMerge"])}
            return rule
        if mutate.get("foreach"):
            rule["mutate"] = {"foreach": [
                {**{k: v for k, v in f.items() if k in ("list", "context", "preconditions")},
                 "patchStrategicMerge": wrap(f.get("patchStrategicMerge"))} for f in mutate["foreach"]]}
            return rule
    if validate:
        kept = {k: validate[k] for k in ("message", "failureAction", "failureActionOverrides",
                                         "allowExistingViolations") if k in validate}
        if validate.get("pattern") is not None:
            rule["validate"] = {**kept, "pattern": wrap(validate["pattern"])}
        elif validate.get("deny") is not None:
            rule["validate"] = {**kept, "deny": validate["deny"]}
        elif validate.get("podSecurity") is not None:
            rule["validate"] = {**kept, "podSecurity": copy.deepcopy(validate["podSecurity"])}
        elif validate.get("anyPattern") is not None:
            rule["validate"] = {**kept, "anyPattern": [wrap(p) for p in validate["anyPattern"]]}
        elif validate.get("foreach"):
            rule["validate"] = {**kept, "foreach": validate["foreach"]}
        elif validate.get("cel") is None:
            return None
        return rule
    return None


def _rewrite(rule: dict, target: str) -> dict:
    """Kyverno rewrites the serialized rule: paths into the Pod now go through the controller's template."""
    cel = bool((rule.get("validate") or {}).get("cel"))
    table = {("pod", False): _POD, ("pod", True): _POD_CEL, ("cron", False): _CRON, ("cron", True): _CRON_CEL}
    text = json.dumps(rule)
    for old, new in table[(target, cel)]:
        text = text.replace(old, new)
    return json.loads(text)
