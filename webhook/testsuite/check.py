"""Match a suite's expected results against what admission produced, the way the Kyverno CLI does.

- A result names a policy (a namespace prefix is ignored) and resources by `name` or `namespace/name`
  (namespaced objects without a namespace are in `default`); its `kind`, when it names the kind of a
  candidate, narrows the candidates (the Kyverno CLI ignores it, but a suite that names two kinds
  sharing one name means each).
- Policy kinds without rules (ValidatingPolicy, MutatingPolicy, ... , ValidatingAdmissionPolicy) are
  checked whatever `rule` says; for the others `rule` matches `rule`, `autogen-rule`, `autogen-cronjob-rule`.
- A policy the loader refused (an unsupported kind, a field it does not honour) fails its own results with
  the reason; the suite's other policies run, as the Kyverno CLI skips a policy it cannot load.
- A policy that ran on the resource but produced no result for it "excluded" the resource: that is a
  pass (reason Excluded), unless the policy says otherwise (`excluded_when_unmatched = False`: the
  Kyverno CLI reports CEL policies with one plain resource rule as not found instead).
- `patchedResources` is compared with the object as mutated up to and including the row's policy (after
  all MutatingPolicies for one of them, which Kyverno applies together); a file that does not hold the
  resource skips the row (unless `failOnMissingResources`), as in the Kyverno CLI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import RuleResult
from webhook.testsuite.compare import differences, fixup_generate_labels, same_resource
from webhook.testsuite.model import ExpectedResult, Suite

RULELESS_KINDS = frozenset({
    "ValidatingPolicy", "NamespacedValidatingPolicy", "MutatingPolicy", "NamespacedMutatingPolicy",
    "GeneratingPolicy", "NamespacedGeneratingPolicy", "ValidatingAdmissionPolicy", "MutatingAdmissionPolicy",
    "ImageValidatingPolicy", "NamespacedImageValidatingPolicy", "DeletingPolicy", "NamespacedDeletingPolicy",
})


@frozen_dataclass
class CheckRow:
    policy: str
    rule: str
    resource: str
    ok: bool
    reason: str
    message: str = ""
    expected: str = ""


@dataclass
class Observed:
    """One resource's admission under one operation."""

    resource: Mapping[str, Any]
    results: list[RuleResult] = field(default_factory=list)
    patched: Mapping[str, Any] | None = None
    generated: list[Mapping[str, Any]] = field(default_factory=list)
    error: str = ""
    # each mutating policy that ran, in order, and the object after it (engine MutateResult.steps)
    steps: list[tuple[Any, Mapping[str, Any]]] = field(default_factory=list)


@frozen_dataclass
class PolicyInfo:
    kind: str
    name: str
    excluded_when_unmatched: bool = True
    refused: str = ""  # why the loader refused it: its results fail with this, the suite's others run


def resource_key(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
    meta = obj.get("metadata") or {}
    return (str(obj.get("apiVersion", "")), str(obj.get("kind", "")), str(meta.get("namespace", "") or ""),
            str(meta.get("name", "")))


def describe(key: tuple[str, str, str, str]) -> str:
    api_version, kind, namespace, name = key
    return "/".join(p for p in (api_version, kind, namespace, name) if p)


def _candidates(expected: ExpectedResult, keys: Sequence[tuple[str, str, str, str]]) -> tuple[list, list[str]]:
    if not expected.resources:
        return list(keys), []
    found, missing = [], []
    for wanted in expected.resources:
        namespace, _, name = wanted.rpartition("/")
        hits = [k for k in keys if k[3] == name and (not namespace or k[2] == namespace)]
        by_kind = [k for k in hits if k[1] == expected.kind]
        hits = by_kind or hits
        if hits:
            found.extend(h for h in hits if h not in found)
        else:
            missing.append(wanted)
    return found, missing


def _rule_matches(expected: ExpectedResult, result: RuleResult) -> bool:
    if not expected.rule or result.policy.kind in RULELESS_KINDS:
        return True
    return result.rule in (expected.rule, f"autogen-{expected.rule}", f"autogen-cronjob-{expected.rule}")


class Checker:
    def __init__(self, suite: Suite, policies: Iterable[PolicyInfo],
                 read_expected: Callable[[str], list[Mapping[str, Any]]]) -> None:
        self.suite = suite
        self.policies = list(policies)
        self.read_expected = read_expected

    def check(self, expected: ExpectedResult, observed: Mapping[tuple[str, str, str, str], Observed]) -> list[CheckRow]:
        named = [p for p in self.policies if p.name == expected.policy_name]
        if named and all(p.refused for p in named):
            why = named[0].refused
            reason = f"Policy refused: {why[:120]}{'...' if len(why) > 120 else ''}"
            return [CheckRow(expected.policy, expected.rule, name, False, reason, why, expected.result)
                    for name in expected.resources or ("*",)]
        keys, missing = _candidates(expected, list(observed))
        rows = [CheckRow(expected.policy, expected.rule, name, False, "Not found",
                    f"no resource {name!r} in the suite's resources", expected.result) for name in missing]
        for key in keys:
            rows.extend(self._check_resource(expected, key, observed[key]))
        return rows

    def _row(self, expected: ExpectedResult, rule: str, key: tuple, ok: bool, reason: str, message: str = "") -> CheckRow:
        return CheckRow(expected.policy, rule, describe(key), ok, reason, message, expected.result)

    def _check_resource(self, expected: ExpectedResult, key: tuple, obs: Observed) -> list[CheckRow]:
        if obs.error:
            return [self._row(expected, expected.rule, key, False, "Error", obs.error)]
        mine = [r for r in obs.results if r.policy.name == expected.policy_name and _rule_matches(expected, r)]
        if not mine:
            return [self._unmatched(expected, key)]
        rows: list[CheckRow] = []
        by_rule: dict[str, list[RuleResult]] = {}
        for result in mine:
            by_rule.setdefault(result.rule, []).append(result)
        for rule, results in by_rule.items():
            row = self._compare_resources(expected, rule, key, obs)
            if row is None:  # the expected file does not hold this resource: not counted
                continue
            if row.ok:
                row = self._compare_outcome(expected, rule, key, results)
            rows.append(row)
        return rows

    def _unmatched(self, expected: ExpectedResult, key: tuple) -> CheckRow:
        known = [p for p in self.policies if p.name == expected.policy_name]
        if not known:
            return self._row(expected, expected.rule, key, False, "Not found",
                             f"the suite's policies hold no policy named {expected.policy_name!r}")
        if any(p.excluded_when_unmatched for p in known):
            return self._row(expected, expected.rule, key, True, "Excluded", "the policy does not apply to this resource")
        return self._row(expected, expected.rule, key, False, "Not found",
                         f"policy {expected.policy_name} produced no result for this resource")

    def _compare_outcome(self, expected: ExpectedResult, rule: str, key: tuple, results: list[RuleResult]) -> CheckRow:
        wrong = [r for r in results if r.outcome.value != expected.result]
        if wrong:
            return self._row(expected, rule, key, False, f"Want {expected.result}, got {wrong[0].outcome.value}",
                             wrong[0].message)
        return self._row(expected, rule, key, True, "Ok", results[0].message)

    def _compare_resources(self, expected: ExpectedResult, rule: str, key: tuple, obs: Observed) -> CheckRow | None:
        if expected.patched_resource:
            actual = _patched_by(expected.policy_name, obs)
            found = self._find(expected.patched_resource, actual)
            if isinstance(found, str):
                if "not found in" in found and not expected.fail_on_missing:
                    return None
                return self._row(expected, rule, key, False, "Resource error", found)
            if not same_resource(actual, found):
                diff = "; ".join(differences(actual, found))
                return self._row(expected, rule, key, False, "Resource diff",
                                 f"patched resource differs from {expected.patched_resource}: {diff}")
        if expected.generated_resources:
            return self._compare_generated(expected, rule, key, obs)
        return self._row(expected, rule, key, True, "Ok")

    def _compare_generated(self, expected: ExpectedResult, rule: str, key: tuple, obs: Observed) -> CheckRow:
        generated = [g for g in obs.generated if _generated_by(g, expected.policy_name, expected.rule)]
        for obj in generated:
            problems = []
            for name in expected.generated_resources:
                found = self._find(name, obj)
                if isinstance(found, str):
                    problems.append(found)
                elif same_resource(fixup_generate_labels(obj), fixup_generate_labels(found)):
                    break
                else:
                    problems.append(f"differs from {name}: " + "; ".join(
                        differences(fixup_generate_labels(obj), fixup_generate_labels(found))))
            else:
                return self._row(expected, rule, key, False, "Resource diff",
                                 f"generated {describe(resource_key(obj))}: {problems[-1] if problems else 'no match'}")
        return self._row(expected, rule, key, True, "Ok")

    def _find(self, name: str, actual: Mapping[str, Any]) -> Mapping[str, Any] | str:
        try:
            candidates = self.read_expected(name)
        except Exception as exc:  # the runner reports, never crashes
            return f"cannot load {name}: {exc}"
        wanted = resource_key(actual)
        for obj in candidates:
            if resource_key(obj) == wanted:
                return obj
        return f"resource {describe(wanted)} not found in {name}"


def _patched_by(policy: str, obs: Observed) -> Mapping[str, Any]:
    """The object `kyverno test` compares with a policy's patchedResource: the resource as mutated up to and
    including that policy (one after the other, so a later policy's change or error does not show), and for
    MutatingPolicies, which Kyverno applies together, after all of them. The final object otherwise."""
    ran = [(p.id, obj) for p, obj in obs.steps]
    mine = [pid for pid, _ in ran if pid.name == policy]
    if mine:
        together = mine[-1].kind in _APPLIED_TOGETHER
        return [obj for pid, obj in ran if (pid.kind in _APPLIED_TOGETHER if together else pid.name == policy)][-1]
    return obs.patched if obs.patched is not None else obs.resource


_APPLIED_TOGETHER = frozenset({"MutatingPolicy", "NamespacedMutatingPolicy"})


def _generated_by(obj: Mapping[str, Any], policy: str, rule: str = "") -> bool:
    """Kyverno compares each rule's own generated objects; the ownership labels say which rule made one."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    owner = labels.get("generate.kyverno.io/policy-name")
    by_rule = labels.get("generate.kyverno.io/rule-name")
    if rule and by_rule is not None and by_rule not in (rule, f"autogen-{rule}", f"autogen-cronjob-{rule}"):
        return False
    return owner is None or owner == policy
