"""ValidatingAdmissionPolicy against the in-tree plugin: the same policies and bindings loaded into the real API
server and into Quartermaster, the same creates sent to both (a server-side dry run there; here the review the API
server would send): the same allow/deny, denial message and code, and warnings. Where they differ the API server is
right. Audit annotations are left out: the test control plane keeps no audit log.

`pytest -m oracle -s tests/cluster/test_vap_oracle.py` prints the agreement that docs/conformance.md quotes."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pytest

from tests.cluster.kube import Kube
from tests.cluster.vap_oracle import (NAMESPACE, Tally, as_request, compare_requests, load_in_tree, matched_plurals,
                                      oracle_namespace, our_load_errors, unload_in_tree, wait_for_policies)
from tests.cluster.vap_pods import generated_pods
from tests.cluster.vap_translate import AUDIT_LABEL, DENY_LABEL, EVERY, WARN_LABEL, bindings, corpus

pytestmark = [pytest.mark.cluster, pytest.mark.oracle, pytest.mark.xdist_group("cluster")]

GENERATED = 300
POD_RULE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}


def _labels(policy: str) -> dict[str, str]:
    return {DENY_LABEL: policy, WARN_LABEL: policy, AUDIT_LABEL: policy}


def side_by_side(admin: Kube, workdir: Path, documents: Sequence[Mapping[str, Any]],
                 objects: Sequence[tuple[str, Mapping[str, Any]]],
                 labels: Callable[[str], dict[str, str]] = _labels) -> Tally:
    """Load `documents` into both, send each (policy label value, object), unload; the tally."""
    oracle_namespace(admin)
    refused = load_in_tree(admin, documents)
    assert not refused, refused
    try:
        wait_for_policies(admin)
        tally = Tally()
        requests = []
        for policy, obj in objects:
            request = as_request(admin, obj, labels(policy))
            assert request is not None
            requests.append((policy, obj["metadata"]["name"], request))
        compare_requests(admin, workdir, documents, requests, tally)
        return tally
    finally:
        unload_in_tree(admin, documents)


def _vap(name: str, validations: list[dict[str, Any]], **spec: Any) -> list[dict[str, Any]]:
    return [{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name},
             "spec": {"matchConstraints": {"resourceRules": [POD_RULE]}, "validations": validations, **spec}},
            *bindings(name)]


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "nginx:1.27", **spec.pop("container", {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"containers": [container], **spec}}


def _agree(tally: Tally) -> None:
    assert tally.cases, "nothing was compared"
    assert not tally.differences, tally.summary()


# --- what the comparison found, one test each ---------------------------------------------------------------------

def test_a_failed_validation_without_reason_is_invalid_422(admin: Kube, tmp_path: Path) -> None:
    """The API server answers `Invalid` (422) when a validation names no reason; Quartermaster said 403."""
    documents = _vap("oracle-no-reason", [{"expression": "object.spec.hostNetwork != true", "message": "no host network"}])
    tally = side_by_side(admin, tmp_path, documents, [("oracle-no-reason", _pod("host", hostNetwork=True))])
    _agree(tally)
    assert tally.cases[0].theirs.code == 422


def test_the_message_falls_back_as_kubernetes_words_it(admin: Kube, tmp_path: Path) -> None:
    """A messageExpression that fails or gives a blank or multi-line string is not the message: `message` is, else
    "failed expression: <expression>"; surrounding blanks are trimmed."""
    documents = _vap("oracle-messages", [
        {"expression": "!has(object.spec.hostNetwork)", "messageExpression": "'label ' + object.metadata.labels.missing"},
        {"expression": "!has(object.spec.hostPID)", "messageExpression": "'  '", "message": "  no host PID \n"},
        {"expression": "!has(object.spec.hostIPC)", "messageExpression": "'two\\nlines'"},
    ])
    pods = [("oracle-messages", _pod("net", hostNetwork=True)), ("oracle-messages", _pod("pid", hostPID=True)),
            ("oracle-messages", _pod("ipc", hostIPC=True))]
    _agree(side_by_side(admin, tmp_path, documents, pods))


def test_a_warn_binding_warns_for_every_failing_validation(admin: Kube, tmp_path: Path) -> None:
    """The API server evaluates every validation and warns once per failure; Quartermaster stopped at the first."""
    documents = _vap("oracle-every-failure", [
        {"expression": "object.spec.hostNetwork != true", "message": "no host network", "reason": "Forbidden"},
        {"expression": "object.spec.hostPID != true", "message": "no host PID", "reason": "Forbidden"},
    ])
    tally = side_by_side(admin, tmp_path, documents, [("oracle-every-failure", _pod("both", hostNetwork=True, hostPID=True))])
    _agree(tally)
    assert len(tally.cases[0].theirs.warnings) == 2


def test_an_audit_binding_does_not_warn(admin: Kube, tmp_path: Path) -> None:
    """validationActions [Audit] puts the failure in the audit event only; Quartermaster warned the user as well."""
    documents = _vap("oracle-audit-only", [{"expression": "object.spec.hostNetwork != true", "message": "no host network"}])
    tally = side_by_side(admin, tmp_path, documents, [("oracle-audit-only", _pod("host-audited", hostNetwork=True))],
                         labels=lambda policy: {AUDIT_LABEL: policy})
    _agree(tally)
    assert tally.cases[0].theirs.allowed and not tally.cases[0].theirs.warnings


def test_or_value_on_a_plain_field_is_the_field(admin: Kube, tmp_path: Path) -> None:
    """cel-go's orValue returns a receiver that is not an optional as it is (the value, or the error of a missing
    field): `container.volumeMounts.orValue([])` is the mounts the ServiceAccount plugin added."""
    documents = _vap("oracle-or-value", [
        {"expression": "object.spec.containers.all(c, c.volumeMounts.orValue([]).size() < 1)", "message": "mounts"},
        {"expression": "object.metadata.labels.orValue({}).size() < 1", "message": "labels"},
        {"expression": "object.spec.containers.all(c, c.resources.requests.orValue({}).size() < 1)", "message": "requests"},
    ])
    _agree(side_by_side(admin, tmp_path, documents, [("oracle-or-value", _pod("plain"))]))


# --- the corpus and generated pods ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def translated() -> list[Any]:
    return list(corpus())


def test_corpus_validating_policies_as_vap(admin: Kube, tmp_path: Path, translated: list[Any]) -> None:
    """Each corpus ValidatingPolicy with a VAP form, loaded into both, with its suites' resources that it matches."""
    tally = Tally()
    loaded: dict[str, Sequence[Mapping[str, Any]]] = {}
    refused: dict[str, str] = {}
    oracle_namespace(admin)
    for t in translated:
        if t.reason:
            tally.skipped[f"no VAP form: {t.reason.split(':')[0]}"] += 1
            continue
        error = load_in_tree(admin, t.documents)
        if error:
            refused[t.name] = error
            tally.skipped["Kyverno's CEL libraries (the API server and Quartermaster both refuse the VAP)"] += 1
        else:
            loaded[t.name] = t.documents
    ours = our_load_errors({t.name: t.documents for t in translated if not t.reason}, tmp_path)
    assert set(ours) == set(refused), f"refused by the API server: {sorted(refused)}; by Quartermaster: {sorted(ours)}"
    try:
        wait_for_policies(admin)
        requests = []
        for t in translated:
            if t.name not in loaded:
                continue
            plurals = matched_plurals(admin, t.documents[0])
            for resource in t.resources:
                request = as_request(admin, resource, _labels(t.name))
                if request is None:
                    tally.skipped["a kind this API server does not serve"] += 1
                elif (resource["apiVersion"].rpartition("/")[0], request.plural) in plurals:
                    requests.append((t.name, f"{resource['kind']}/{resource['metadata'].get('name')}", request))
        compare_requests(admin, tmp_path, [d for docs in loaded.values() for d in docs], requests, tally)
    finally:
        unload_in_tree(admin, [d for docs in loaded.values() for d in docs])
    print("\ncorpus ValidatingPolicies as VAP:", tally.summary())
    _agree(tally)


def test_generated_pods_against_every_pod_policy(admin: Kube, tmp_path: Path, translated: list[Any]) -> None:
    """Generated pods, each sent once with every corpus pod policy's Deny binding selected (the API server's first
    denial must be one of ours), one policy's Warn binding and the next one's Audit binding (the same warnings: the
    API server keeps only the first 4 KiB of warnings of a request, so every policy's at once would not compare)."""
    pod_policies = [t for t in translated if not t.reason and ("", "pods") in matched_plurals(admin, t.documents[0])]
    documents = [d for t in pod_policies for d in t.documents]
    oracle_namespace(admin)
    accepted = []
    for t in pod_policies:
        if not load_in_tree(admin, t.documents):
            accepted += t.documents
    try:
        wait_for_policies(admin)
        requests = []
        names = sorted({d["metadata"]["name"] for d in accepted if d["kind"] == "ValidatingAdmissionPolicy"})
        for index, obj in enumerate(generated_pods(GENERATED)):
            obj["metadata"]["namespace"] = NAMESPACE
            request = as_request(admin, obj, {DENY_LABEL: EVERY, WARN_LABEL: names[index % len(names)],
                                              AUDIT_LABEL: names[(index + 1) % len(names)]})
            assert request is not None
            requests.append(("(all pod policies)", obj["metadata"]["name"], request))
        tally = Tally()
        compare_requests(admin, tmp_path, accepted, requests, tally)
    finally:
        unload_in_tree(admin, documents)
    print(f"\ngenerated pods x {len(pod_policies)} pod policies:", tally.summary())
    _agree(tally)
