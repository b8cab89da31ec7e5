"""Kyverno ``match``/``exclude`` (pkg/engine/utils/match.go): ``any``/``all`` filters or the legacy single block.

A filter matches when every condition it names holds: kinds (``Kind``, ``version/Kind``, ``group/version/Kind``,
``Kind/subresource``, wildcards), names, namespaces, annotations, selector, namespaceSelector, operations, and
the user conditions subjects/roles/clusterRoles.
"""

from __future__ import annotations

from dataclasses import field
from functools import lru_cache
from typing import Any, Mapping

from webhook.model.quickinit import frozen_dataclass
from webhook.model.selectors import parse_selector

from .gotypes import contains_wildcard, wildcard_match


@frozen_dataclass
class RequestInfo:
    """What matching looks at, taken from the admission request (or a test's resource and userinfo)."""

    group: str
    version: str
    kind: str
    operation: str
    name: str
    namespace: str
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    subresource: str = ""
    namespace_labels: Mapping[str, str] | None = None
    username: str = ""
    groups: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    cluster_roles: tuple[str, ...] = ()
    # RuleSelector.applies' answers for this request, by the selector's identity: a policy's matches() and its
    # validate() ask the same rules of the same info
    applies: dict[int, tuple[Any, bool]] = field(default_factory=dict, compare=False, repr=False)


@lru_cache(maxsize=1024)  # the same few kind strings on every request
def parse_kind_selector(text: str) -> tuple[str, str, str, str]:
    """(group, version, kind, subresource); missing group/version are wildcards."""
    parts = text.split("/")
    upper = [bool(p[:1]) and p[:1].isupper() or p == "*" for p in parts]
    if len(parts) == 1:
        return "*", "*", parts[0], ""
    if len(parts) == 2:
        return ("*", "*", parts[0], parts[1]) if upper[0] else ("*", parts[0], parts[1], "")
    if len(parts) == 3:
        return ("*", parts[0], parts[1], parts[2]) if upper[1] and not upper[2] else (parts[0], parts[1], parts[2], "")
    return parts[0], parts[1], parts[2], "/".join(parts[3:])


def kind_matches(kinds: list[str], info: RequestInfo) -> bool:
    for entry in kinds:
        group, version, kind, sub = parse_kind_selector(entry)
        if not (wildcard_match(group, info.group) and wildcard_match(version, info.version)
                and wildcard_match(kind, info.kind)):
            continue
        if sub:
            if wildcard_match(sub, info.subresource):
                return True
        elif not info.subresource or kind == "*":
            return True
    return False


def _wild_any(patterns: list[str], value: str) -> bool:
    return any(wildcard_match(p, value) for p in patterns)


def labels_match(raw_selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    selector = dict(raw_selector)
    match_labels = selector.get("matchLabels") or {}
    if any(contains_wildcard(str(k)) or contains_wildcard(str(v)) for k, v in match_labels.items()):
        if not all(any(wildcard_match(str(k), lk) and wildcard_match(str(v), lv) for lk, lv in labels.items())
                   for k, v in match_labels.items()):
            return False
        selector = {**selector, "matchLabels": {}}
    return parse_selector(selector).matches(labels) if selector.get("matchLabels") or selector.get(
        "matchExpressions") else True


def _resources_match(resources: Mapping[str, Any], info: RequestInfo) -> bool:
    kinds = resources.get("kinds") or []
    if kinds and not kind_matches(kinds, info):
        return False
    names = list(resources.get("names") or []) + ([resources["name"]] if resources.get("name") else [])
    if names and not _wild_any(names, info.name):
        return False
    namespaces = resources.get("namespaces") or []
    if namespaces:
        target = info.name if info.kind == "Namespace" else info.namespace
        if not _wild_any(namespaces, target):
            return False
    operations = resources.get("operations") or []
    if operations and info.operation not in operations:
        return False
    annotations = resources.get("annotations")
    if annotations and not all(any(wildcard_match(str(k), ak) and wildcard_match(str(v), av)
                                   for ak, av in info.annotations.items()) for k, v in annotations.items()):
        return False
    if resources.get("selector") is not None and not labels_match(resources["selector"], info.labels):
        return False
    if resources.get("namespaceSelector") is not None and info.kind != "Namespace":
        if info.namespace_labels is None or not labels_match(resources["namespaceSelector"], info.namespace_labels):
            return False
    return True


def _subject_matches(subject: Mapping[str, Any], info: RequestInfo) -> bool:
    kind, name = subject.get("kind"), str(subject.get("name", ""))
    if kind == "ServiceAccount":
        return info.username == f"system:serviceaccount:{subject.get('namespace', '')}:{name}"
    if kind == "Group":
        return any(wildcard_match(name, g) for g in info.groups)
    return wildcard_match(name, info.username)


def _user_match(block: Mapping[str, Any], info: RequestInfo) -> bool:
    roles, cluster_roles, subjects = block.get("roles"), block.get("clusterRoles"), block.get("subjects")
    if roles and not set(roles) & set(info.roles):
        return False
    if cluster_roles and not set(cluster_roles) & set(info.cluster_roles):
        return False
    if subjects and not any(_subject_matches(s, info) for s in subjects):
        return False
    return True


def filter_matches(entry: Mapping[str, Any], info: RequestInfo) -> bool:
    return _resources_match(entry.get("resources") or {}, info) and _user_match(entry, info)


def block_matches(block: Mapping[str, Any] | None, info: RequestInfo) -> bool:
    """``match`` semantics: any (one filter), all (every filter), or the legacy block (resources + user)."""
    if not block:
        return False
    if block.get("any"):
        return any(filter_matches(f, info) for f in block["any"])
    if block.get("all"):
        return all(filter_matches(f, info) for f in block["all"])
    return filter_matches(block, info)


def excluded(block: Mapping[str, Any] | None, info: RequestInfo) -> bool:
    if not block or not (block.get("any") or block.get("all") or block.get("resources") or
                         block.get("subjects") or block.get("roles") or block.get("clusterRoles")):
        return False
    return block_matches(block, info)


@frozen_dataclass
class RuleSelector:
    """A rule's match and exclude blocks, with the kinds its match can select at all, worked out once at load."""

    match: Mapping[str, Any] | None
    exclude: Mapping[str, Any] | None
    # the kinds the match block can select when its kind selectors name them without wildcards (None: any
    # kind may): a Pod is checked against the autogen rules of every pod controller, a set lookup each
    gate: frozenset[str] | None = None

    @classmethod
    def of(cls, rule: Mapping[str, Any]) -> "RuleSelector":
        return cls(rule.get("match"), rule.get("exclude"), _gate_of(rule.get("match")))

    def applies(self, info: RequestInfo) -> bool:
        found = info.applies.get(id(self))
        if found is None or found[0] is not self:  # (the entry holds the selector: its id is not reused meanwhile)
            applies = (self.gate is None or info.kind in self.gate) and block_matches(self.match, info) \
                and not excluded(self.exclude, info)
            found = info.applies[id(self)] = (self, applies)
        return found[1]


def rule_applies(rule: Mapping[str, Any], info: RequestInfo) -> bool:
    """Whether a rule as written applies (tests and tools; compiled rules keep their RuleSelector)."""
    return RuleSelector.of(rule).applies(info)


def _gate_of(block: Any) -> frozenset[str] | None:
    if not isinstance(block, Mapping):
        return None
    if block.get("any"):
        gates = [_filter_gate(f) for f in block["any"]]
        return None if any(g is None for g in gates) else frozenset().union(*gates)  # type: ignore[arg-type]
    if block.get("all"):
        known = [g for g in (_filter_gate(f) for f in block["all"]) if g is not None]
        return frozenset.intersection(*known) if known else None  # each filter must match: each one's kinds
    return _filter_gate(block)


def _filter_gate(entry: Any) -> frozenset[str] | None:
    resources = entry.get("resources") if isinstance(entry, Mapping) else None
    kinds = resources.get("kinds") if isinstance(resources, Mapping) else None
    if not kinds or not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
        return None  # no kinds named (kind_matches is not asked), or not what kind_matches reads
    bare = {parse_kind_selector(k)[2] for k in kinds}
    return None if any(contains_wildcard(k) for k in bare) else frozenset(bare)
