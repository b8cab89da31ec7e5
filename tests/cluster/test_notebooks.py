"""Notebooks as Kubeflow makes them, through the real API server: the web app posts the Notebook, the notebook
controller's StatefulSet (built as its source builds it) is turned into a pod by Kubernetes' StatefulSet
controller, and that pod reaches Quartermaster with the controller's identity in `userInfo`. The stored pod has the
token refresher, the home and the DRA claim; a teammate's forgeries through the API server get none of it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.cluster.control import ClusterRecord
from tests.cluster.kube import Kube, eventually
from tests.cluster.kubeflow import CONTROLLER, WEB_APP, install_kubeflow, notebook, profile_user, statefulset_for
from tests.cluster.quartermaster import CLUSTER_VALUES, Installation
from tests.cluster.workloads import make_profile, pod
from tests.platform.notebook.eosxd import TOKEN, env_value, eosxd_read, mount_token, notebook_rootfs

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("cluster")]

OWNER, TEAMMATE = "jdoe@example.org", "mallory@example.org"


@pytest.fixture(scope="module")
def kubeflow(admin: Kube, control_plane: ClusterRecord, quartermaster: Installation,
             tmp_path_factory: pytest.TempPathFactory) -> dict[str, Kube]:
    return install_kubeflow(admin, control_plane, tmp_path_factory.mktemp("kubeflow"))


@pytest.fixture
def team_profile(admin: Kube, control_plane: ClusterRecord, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A team profile owned by jdoe where mallory is a contributor; the ServiceAccount Kubeflow's profile
    controller makes, and the credentials Secret of each member."""
    namespace = make_profile(admin, owner=OWNER, profile_class="team")["metadata"]["name"]
    admin.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default-editor",
                                                                             "namespace": namespace}})
    for user in ("jdoe", "mallory"):
        admin.create({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                      "metadata": {"name": f"oidc-{user}", "namespace": namespace},
                      "stringData": {"refresh_token": f"refresh-token-of-{user}"}})
    yield {"namespace": namespace,
           "owner": profile_user(admin, control_plane, tmp_path, OWNER, namespace),
           "teammate": profile_user(admin, control_plane, tmp_path, TEAMMATE, namespace)}


def _notebook_pod(admin: Kube, namespace: str, name: str) -> dict[str, Any]:
    try:
        return eventually(lambda: admin.get("v1", "Pod", f"{name}-0", namespace), 60,
                          message=f"the StatefulSet controller's pod {name}-0")
    except AssertionError as error:
        events = [e.get("message") for e in admin.events_for(namespace, name)]
        raise AssertionError(f"{error}; the StatefulSet's events: {events}") from None


def _spawn(kubeflow: dict[str, Kube], namespace: str, name: str, creator: str,
           limits: dict[str, Any] | None = None) -> dict[str, Any]:
    created = kubeflow[WEB_APP].create(notebook(name, namespace, creator, limits))
    kubeflow[CONTROLLER].create(statefulset_for(created))
    return created


def test_a_notebook_pod_from_the_statefulset_controller_gets_home_token_and_gpu(
        admin: Kube, quartermaster: Installation, kubeflow: dict[str, Kube], team_profile: dict[str, Any],
        tmp_path: Path) -> None:
    namespace = team_profile["namespace"]
    _spawn(kubeflow, namespace, "analysis", OWNER, limits={"nvidia.com/gpu": "1"})
    stored = _notebook_pod(admin, namespace, "analysis")
    containers = {c["name"]: c for c in stored["spec"]["containers"]}
    sidecars = {c["name"]: c for c in stored["spec"].get("initContainers") or []}
    assert "oidc-token-refresher" in sidecars, "no token refresher"
    refresher = sidecars["oidc-token-refresher"]
    assert refresher.get("restartPolicy") == "Always", "the refresher is a native sidecar"
    # the chart's image and the site's IdP (the values docs/deploy.md tells a platform engineer to set)
    image = CLUSTER_VALUES["image"]
    assert refresher["image"] == f"{image['repository']}:{image['tag']}"
    assert f"--issuer={CLUSTER_VALUES['notebook']['issuer']}" in refresher["args"]
    assert any(v.get("secret", {}).get("secretName") == "oidc-jdoe" for v in stored["spec"]["volumes"])
    main = containers["analysis"]
    env = {e["name"]: e.get("value") for e in main.get("env") or []}
    assert env.get("HOME") == "/eos/user/j/jdoe"
    assert any(m["mountPath"] == "/eos" for m in main["volumeMounts"])
    assert "nvidia.com/gpu" not in main["resources"].get("limits", {})
    assert stored["spec"]["resourceClaims"], "the notebook's GPU was not rewritten into a claim"
    # the token where eosxd finds it: the path OAUTH2_TOKEN names is the refresher's file, in the volume both
    # containers mount, and eosxd's symlink-refusing walk reads it in a filesystem laid out like the Ubuntu image
    token_path = env_value(main, "OAUTH2_TOKEN").removeprefix("FILE:")
    assert f"--token-file={token_path}" in refresher["args"]
    mounts = [{m["name"]: m["mountPath"] for m in c["volumeMounts"]} for c in (main, refresher)]
    (volume,) = {name for name, path in mounts[0].items() if path == os.path.dirname(token_path)}
    assert mounts[1].get(volume) == os.path.dirname(token_path)
    root = notebook_rootfs(tmp_path / "rootfs")
    mount_token(root, os.path.dirname(token_path), os.path.basename(token_path))
    assert eosxd_read(root, token_path) == TOKEN
    # the identity came from the Notebook's creator through the owner chain, not from anything on the pod
    assert stored["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"


def test_a_teammates_bare_pod_owned_by_the_notebooks_statefulset_gets_no_identity(
        admin: Kube, quartermaster: Installation, kubeflow: dict[str, Kube], team_profile: dict[str, Any]) -> None:
    namespace = team_profile["namespace"]
    _spawn(kubeflow, namespace, "victim", OWNER)
    owner_pod = _notebook_pod(admin, namespace, "victim")
    statefulset = admin.get("apps/v1", "StatefulSet", "victim", namespace)
    forged = pod("victim-forged", namespace, labels={"notebook-name": "victim", "statefulset": "victim"})
    forged["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "victim",
                                              "uid": statefulset["metadata"]["uid"], "controller": True}]
    result = team_profile["teammate"].kubectl_create(forged, check=False)
    stored = admin.get("v1", "Pod", "victim-forged", namespace)
    if result.returncode == 0:
        secrets = {v.get("secret", {}).get("secretName") for v in stored["spec"].get("volumes") or []}
        assert "oidc-jdoe" not in secrets, "the teammate's pod got the owner's credentials"
        assert not any(c["name"] == "oidc-token-refresher" for c in stored["spec"].get("initContainers") or [])
    else:
        assert stored is None and "denied the request" in result.stderr
    assert owner_pod["metadata"]["name"] == "victim-0"


def test_a_teammates_pod_mounting_the_owners_credentials_is_refused(
        admin: Kube, quartermaster: Installation, kubeflow: dict[str, Kube], team_profile: dict[str, Any]) -> None:
    namespace = team_profile["namespace"]
    thief = pod("thief", namespace)
    thief["spec"]["volumes"] = [{"name": "creds", "secret": {"secretName": "oidc-jdoe"}}]
    thief["spec"]["containers"][0]["volumeMounts"] = [{"name": "creds", "mountPath": "/creds"}]
    result = team_profile["teammate"].kubectl_create(thief, check=False)
    assert result.returncode != 0 and "denied the request" in result.stderr, result.stderr
    assert admin.get("v1", "Pod", "thief", namespace) is None


def test_a_teammates_statefulset_controlled_by_the_owners_notebook_is_refused(
        admin: Kube, quartermaster: Installation, kubeflow: dict[str, Kube], team_profile: dict[str, Any]) -> None:
    namespace = team_profile["namespace"]
    created = kubeflow[WEB_APP].create(notebook("borrowed", namespace, OWNER))
    result = team_profile["teammate"].kubectl_create(statefulset_for(created), check=False)
    assert result.returncode != 0 and "denied the request" in result.stderr, result.stderr


def test_a_teammate_cannot_write_the_owner_as_a_notebooks_creator(
        admin: Kube, quartermaster: Installation, kubeflow: dict[str, Kube], team_profile: dict[str, Any]) -> None:
    namespace = team_profile["namespace"]
    result = team_profile["teammate"].kubectl_create(notebook("impostor", namespace, OWNER), check=False)
    assert result.returncode != 0 and "denied the request" in result.stderr, result.stderr
    own = team_profile["teammate"].kubectl_create(notebook("honest", namespace, TEAMMATE), check=False)
    assert own.returncode == 0, own.stderr
    changed = team_profile["teammate"].kubectl(
        "annotate", "notebook", "honest", "-n", namespace, "--overwrite",
        f"notebooks.kubeflow.org/creator={OWNER}", check=False)
    assert changed.returncode != 0 and "denied the request" in changed.stderr, changed.stderr
