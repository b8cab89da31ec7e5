"""Issue 39, finding 3: a team member takes a teammate's notebook identity (home and OIDC credentials).

The team profile ml-team (owner alice) holds bob's Notebook `training` and the StatefulSet the notebook
controller made from it (tests/cases/notebook/team-creator). carol, another member, can read both (their
uids too) and write anything of her own. Each attack is a real AdmissionReview as the API server sends it;
the standalone tests (test_trust.py) and the live ones (tests/kube) replay the same list."""

from __future__ import annotations

import copy
from typing import Any

from tests.support import REPO, load_yaml

CASE = REPO / "tests" / "cases" / "notebook" / "team-creator"
NOTEBOOK, STATEFULSET = load_yaml(CASE / "state.yaml")
CONTROLLER_POD = load_yaml(CASE / "resource.yaml")[0]  # training-0 as the StatefulSet controller creates it
CAROL = "carol@example.org"
BOB = "bob@example.org"
WEB_APP = "system:serviceaccount:kubeflow:jupyter-web-app-service-account"
NOTEBOOK_CONTROLLER = "system:serviceaccount:kubeflow:notebook-controller-service-account"
GARBAGE_COLLECTOR = "system:serviceaccount:kube-system:generic-garbage-collector"
BOBS_SECRET = "oidc-bob"


def team_namespace() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "ml-team", "annotations": {"owner": "alice@example.org"},
        "labels": {"app.kubernetes.io/part-of": "kubeflow-profile", "quartermaster.dev/profile-class": "team"}}}


def team_objects() -> list[dict[str, Any]]:
    return [team_namespace(), copy.deepcopy(NOTEBOOK), copy.deepcopy(STATEFULSET)]


def forged_pod() -> dict[str, Any]:
    """carol's bare pod: the notebook label and a controller ownerReference to bob's StatefulSet (uid and all)."""
    pod = copy.deepcopy(CONTROLLER_POD)
    pod["metadata"]["name"] = "not-training"
    return pod


def plain_pod(how: str) -> dict[str, Any]:
    """A pod with no notebook label that reads bob's credentials Secret itself."""
    container: dict[str, Any] = {"name": "main", "image": "registry.example.org/tools:1.0"}
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": f"reader-{how.lower()}", "namespace": "ml-team"},
                           "spec": {"containers": [container]}}
    if how == "volume":
        pod["spec"]["volumes"] = [{"name": "loot", "secret": {"secretName": BOBS_SECRET}}]
        container["volumeMounts"] = [{"name": "loot", "mountPath": "/loot"}]
    elif how == "projected":
        pod["spec"]["volumes"] = [{"name": "loot", "projected": {"sources": [{"secret": {"name": BOBS_SECRET}}]}}]
        container["volumeMounts"] = [{"name": "loot", "mountPath": "/loot"}]
    elif how == "secretKeyRef":
        container["env"] = [{"name": "LOOT", "valueFrom": {"secretKeyRef": {"name": BOBS_SECRET, "key": "refresh_token"}}}]
    else:
        container["envFrom"] = [{"secretRef": {"name": BOBS_SECRET}}]
    return pod


def notebook(creator: str | None, name: str = "analysis") -> dict[str, Any]:
    nb = copy.deepcopy(NOTEBOOK)
    nb["metadata"] = {"name": name, "namespace": "ml-team", "labels": {"app": name},
                      "annotations": {} if creator is None else {"notebooks.kubeflow.org/creator": creator}}
    return nb


def tenant_statefulset() -> dict[str, Any]:
    """carol's own StatefulSet, controlled (by its ownerReference) by bob's Notebook, running her image."""
    sts = copy.deepcopy(STATEFULSET)
    sts["metadata"]["name"] = "borrowed"
    sts["metadata"].pop("uid")
    template = sts["spec"]["template"]
    template["metadata"]["labels"] = {"statefulset": "borrowed", "notebook-name": "training"}
    template["spec"]["containers"][0]["image"] = "registry.example.org/carol/exfiltrate:1.0"
    sts["spec"]["selector"]["matchLabels"] = {"statefulset": "borrowed"}
    return sts


def edited(obj: dict[str, Any], change: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    change(out)
    return out
