"""Whose notebook it is (Owner / Creator / Fixed per profile class, fail closed), the uid the token
refresher runs as, and the Pod Security check of injected volumes. The engine-level cases are in
tests/cases/notebook (team-*, notebook-uid-from-pod, pod-security-forbids-hostpath)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.support import REPO, load_yaml
from webhook.platform.base import profile_info
from webhook.platform.notebook.identity import Source, UnknownIdentity, compile_identity, resolve
from webhook.platform.notebook.podsecurity import enforced_level, forbidden_volumes
from webhook.platform.notebook.render import InvalidOwner, notebook_uid
from webhook.state.memory import InMemoryClusterState

CASE = REPO / "tests" / "cases" / "notebook" / "team-creator"
POD = load_yaml(CASE / "resource.yaml")[0]
OBJECTS = load_yaml(CASE / "state.yaml")


def team(label: str = "team") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "ml-team", "annotations": {"owner": "alice@example.org"},
        "labels": {"app.kubernetes.io/part-of": "kubeflow-profile", "quartermaster.dev/profile-class": label}}}


def who(spec_raw: dict[str, Any], namespace: dict[str, Any], objects=OBJECTS, pod=POD):
    lookups = InMemoryClusterState(objects).lookups
    return resolve(compile_identity(spec_raw), profile_info(namespace), namespace, pod, lookups)


def test_team_notebooks_get_their_creator_never_the_owner():
    identity = who({}, team())
    assert identity.user == "bob"
    assert "bob@example.org" in identity.described and "alice" not in identity.described


def test_personal_profiles_use_the_owner_and_a_fixed_class_its_identity():
    personal = team(label="personal")
    assert who({}, personal).user == "alice"
    assert who({"classes": {"team": {"source": "Fixed", "user": "mlteam-svc"}}}, team()).user == "mlteam-svc"


def test_a_class_the_policy_does_not_name_is_never_given_the_owner():
    assert compile_identity({}).rule_for(team("lab"))[1].source is Source.CREATOR
    with pytest.raises(UnknownIdentity):
        who({}, team("lab"), objects=[])


@pytest.mark.parametrize("change, words", [
    (lambda objs, pod: objs.pop(0), "Notebook ml-team/training is not in the cluster state"),
    (lambda objs, pod: objs[0]["metadata"]["annotations"].pop("notebooks.kubeflow.org/creator"), "has no notebooks"),
    (lambda objs, pod: objs[0]["metadata"].update(uid="another"), "has uid another"),
    (lambda objs, pod: pod["metadata"].pop("ownerReferences"), "is not controlled by a StatefulSet"),
    (lambda objs, pod: objs[1]["metadata"]["ownerReferences"][0].update(kind="Deployment"), "not controlled by a Notebook"),
    (lambda objs, pod: objs[0]["metadata"]["annotations"].update({"notebooks.kubeflow.org/creator": "bob"}), "not an e-mail"),
])
def test_an_unknown_creator_fails_closed(change, words):
    objects, pod = copy.deepcopy(OBJECTS), copy.deepcopy(POD)
    change(objects, pod)
    with pytest.raises(UnknownIdentity, match=words):
        who({}, team(), objects=objects, pod=pod)


def test_fixed_needs_a_user():
    from webhook.model.errors import PolicyCompileError
    with pytest.raises(PolicyCompileError, match="required with source Fixed"):
        compile_identity({"classes": {"team": {"source": "Fixed"}}})


def test_the_refresher_runs_as_the_notebooks_uid():
    pod = {"spec": {"securityContext": {"runAsUser": 1001}, "containers": [{"name": "nb"}]}}
    assert notebook_uid(1000, pod, pod["spec"]["containers"]) == 1001
    pod["spec"]["containers"][0]["securityContext"] = {"runAsUser": 2000}  # the container's wins
    assert notebook_uid(1000, pod, pod["spec"]["containers"]) == 2000
    assert notebook_uid(1000, {"spec": {}}, [{"name": "nb"}]) == 1000  # the image's user (jovyan)
    with pytest.raises(InvalidOwner, match="different uids"):
        notebook_uid(1000, pod, [{"name": "a"}, {"name": "b", "securityContext": {"runAsUser": 7}}])
    with pytest.raises(InvalidOwner, match="never as root"):
        notebook_uid(1000, {"spec": {"securityContext": {"runAsUser": 0}}}, [{"name": "nb"}])


@pytest.mark.parametrize("level, volume, forbidden", [
    ("privileged", {"name": "h", "hostPath": {"path": "/eos"}}, []),
    ("baseline", {"name": "h", "hostPath": {"path": "/eos"}}, ["h (hostPath)"]),
    ("baseline", {"name": "n", "nfs": {"server": "s", "path": "/x"}}, []),
    ("restricted", {"name": "n", "nfs": {"server": "s", "path": "/x"}}, ["n (nfs)"]),
    ("restricted", {"name": "e", "persistentVolumeClaim": {"claimName": "eos"}}, []),
    ("restricted", {"name": "c", "csi": {"driver": "eosxd.csi.cern.ch"}}, []),
])
def test_pod_security_levels(level, volume, forbidden):
    assert forbidden_volumes([volume], level) == forbidden


def test_enforced_level_from_the_namespace_label():
    ns = {"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "baseline"}}}
    assert enforced_level(ns, "privileged") == "baseline"
    assert enforced_level({"metadata": {}}, "privileged") == "privileged"
    assert enforced_level({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "bogus"}}}, "privileged") == "restricted"
