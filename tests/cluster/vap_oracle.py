"""Running the VAP/MAP comparison: policies loaded into the API server and into Quartermaster, the same requests
sent to both, each difference named by its cause, the agreement tallied (docs/conformance.md quotes it)."""

from __future__ import annotations

import copy
import subprocess
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml
from kubernetes.dynamic.exceptions import DynamicApiError

from tests.cluster.kube import Kube, eventually
from tests.cluster.vap_sides import OPT_OUT, Decision, Request, admission_review, defaulted, in_tree, same_warnings
from tests.cluster.vap_sides import quartermaster as evaluate_ours
from tests.cluster.vap_sides import requester
from tests.cluster.vap_translate import AUDIT_LABEL, DENY_LABEL, WARN_LABEL
from tests.support import REPO

NAMESPACE = "vap-oracle"
SENTINEL = "vap-oracle-sentinel"
SENTINEL_LABEL = "vap-oracle.quartermaster.dev/sentinel"


@dataclass(frozen=True)
class Case:
    """One request both sides answered, and how their answers compare ("" when they agree)."""
    policy: str
    name: str
    theirs: Decision
    ours: Decision
    difference: str


@dataclass
class Tally:
    cases: list[Case] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)  # why a request or a policy was not compared

    @property
    def differences(self) -> list[Case]:
        return [c for c in self.cases if c.difference]

    def summary(self) -> str:
        causes = Counter(c.difference.split(":")[0] for c in self.differences)
        lines = [f"{len(self.cases)} cases, {len(self.cases) - len(self.differences)} agree"]
        lines += [f"  differ ({n}): {cause}" for cause, n in causes.most_common()]
        lines += [f"  not compared ({n}): {why}" for why, n in self.skipped.most_common()]
        lines += [f"  - {c.policy} {c.name}: {c.difference}" for c in self.differences[:40]]
        return "\n".join(lines)


def compare(theirs: Decision, ours: Decision) -> str:
    """The first way `ours` differs from the API server's answer, or ""."""
    if theirs.allowed != ours.allowed:
        return f"allowed: API server {theirs.allowed}, Quartermaster {ours.allowed} ({theirs.raw or ours.raw})"[:400]
    if not theirs.allowed:
        first = theirs.denials[0]
        if first not in ours.denials:
            return f"denial message: API server {first}, Quartermaster {ours.denials}"[:400]
        if theirs.code != ours.code:
            return f"status code: API server {theirs.code}, Quartermaster {ours.code}"
    if not same_warnings(theirs.warnings, ours.warnings):
        only_theirs = [w for w in theirs.warnings if not same_warnings([w], [o for o in ours.warnings if o[0] == w[0]][:1])]
        only_ours = [o for o in ours.warnings if not any(same_warnings([w], [o]) for w in theirs.warnings)]
        return f"warnings: only the API server's {only_theirs}, only Quartermaster's {only_ours}"[:600]
    return ""


def oracle_namespace(kube: Kube, name: str = NAMESPACE) -> dict[str, Any]:
    """A namespace the chart's webhooks leave alone, with its default ServiceAccount (pods need it)."""
    if kube.get("v1", "Namespace", name) is None:
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(OPT_OUT)}})
    eventually(lambda: kube.get("v1", "ServiceAccount", "default", name), 30, message=f"ServiceAccount {name}/default")
    namespace = kube.get("v1", "Namespace", name)
    assert namespace is not None
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        k: namespace["metadata"][k] for k in ("name", "labels", "annotations", "uid") if namespace["metadata"].get(k)}}


def load_in_tree(kube: Kube, documents: Sequence[Mapping[str, Any]]) -> str:
    """Create the policy and its bindings; the API server's refusal, or ""."""
    for doc in documents:
        try:
            kube.create(doc)
        except DynamicApiError as exc:
            if exc.status == 409:
                kube.apply_all([doc])
                continue
            return f"{doc['kind']}: {exc.summary()}"
    return ""


def wait_for_policies(kube: Kube) -> None:
    """The plugin compiles what its informers deliver, in order: a policy created after all others that denies
    once it is active says they are all active."""
    token = uuid.uuid4().hex[:8]
    load_in_tree(kube, [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
         "metadata": {"name": f"{SENTINEL}-{token}"}, "spec": {
             "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                                     "resources": ["configmaps"]}]},
             "validations": [{"expression": "false", "message": token}]}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
         "metadata": {"name": f"{SENTINEL}-{token}"}, "spec": {
             "policyName": f"{SENTINEL}-{token}", "validationActions": ["Deny"],
             "matchResources": {"objectSelector": {"matchLabels": {SENTINEL_LABEL: token}}}}}])
    probe = Request({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "probe", "namespace": NAMESPACE, "labels": {SENTINEL_LABEL: token}}}, "configmaps", True)
    eventually(lambda: not in_tree(kube, probe).allowed, 60, message="the API server's policies to become active")
    for kind in ("ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy"):
        kube.delete("admissionregistration.k8s.io/v1", kind, f"{SENTINEL}-{token}")


def unload_in_tree(kube: Kube, documents: Iterable[Mapping[str, Any]]) -> None:
    for doc in documents:
        kube.delete(doc["apiVersion"], doc["kind"], doc["metadata"]["name"])


def our_load_errors(documents_by_policy: Mapping[str, Sequence[Mapping[str, Any]]], workdir: Path) -> dict[str, str]:
    """`quartermaster validate` over one file per policy: the policies it refuses, with its message."""
    directory = workdir / "validate"
    directory.mkdir(parents=True, exist_ok=True)
    for name, documents in documents_by_policy.items():
        (directory / f"{name}.yaml").write_text(yaml.safe_dump_all([dict(d) for d in documents]))
    result = subprocess.run([sys.executable, "-m", "webhook", "validate", str(directory)],
                            capture_output=True, text=True, cwd=REPO)
    errors: dict[str, str] = {}
    for line in result.stdout.splitlines():
        path, _, message = line.partition(": ")
        errors.setdefault(Path(path).stem, message)
    return errors


def matched_plurals(kube: Kube, policy: Mapping[str, Any]) -> set[tuple[str, str]]:
    """(group, plural) of each resource the policy's matchConstraints name (subresources and wildcards left out)."""
    rules = ((policy.get("spec") or {}).get("matchConstraints") or {}).get("resourceRules") or []
    return {(g, r) for rule in rules for g in rule.get("apiGroups") or [""] for r in rule.get("resources") or []
            if "/" not in r and r != "*"}


def as_request(kube: Kube, obj: Mapping[str, Any], labels: Mapping[str, str]) -> Request | None:
    try:
        resource = kube.resource(obj["apiVersion"], obj["kind"])
    except Exception:  # a kind this API server does not serve (a CRD of another project)
        return None
    body = copy.deepcopy(dict(obj))
    meta = body.setdefault("metadata", {})
    meta.pop("resourceVersion", None)
    meta.pop("uid", None)
    meta["labels"] = {**(meta.get("labels") or {}), **labels}
    if resource.namespaced:
        meta["namespace"] = NAMESPACE
    else:
        meta.pop("namespace", None)
    body.pop("status", None)
    return Request(body, resource.name, resource.namespaced)


def compare_requests(kube: Kube, workdir: Path, documents: Sequence[Mapping[str, Any]],
                     requests: Sequence[tuple[str, str, Request]], tally: Tally) -> None:
    """Send each (policy, case name, request) to both sides (the policies already active in the API server)."""
    namespace = oracle_namespace(kube)
    user = requester(kube)
    reviews, theirs, names = [], [], []
    for policy, name, request in requests:
        unselected = copy.deepcopy(request.obj)
        unselected["metadata"]["labels"] = {k: ("none" if k in (DENY_LABEL, WARN_LABEL, AUDIT_LABEL) else v)
                                            for k, v in unselected["metadata"]["labels"].items()}
        base = defaulted(kube, Request(unselected, request.plural, request.namespaced))
        if base is None:
            tally.skipped["the API server refuses the object itself (schema validation)"] += 1
            continue
        base["metadata"]["labels"] = dict(request.obj["metadata"]["labels"])
        answer = in_tree(kube, request)
        if not answer.reached:
            tally.skipped["the API server refuses the object itself (schema validation)"] += 1
            continue
        reviews.append(("/validate", admission_review(request, base, user)))
        theirs.append(answer)
        names.append((policy, name))
    ours = evaluate_ours(documents, [namespace], workdir / f"ours-{time.monotonic_ns()}", reviews)
    for (policy, name), t, o in zip(names, theirs, ours):
        tally.cases.append(Case(policy, name, t, o, compare(t, o)))
