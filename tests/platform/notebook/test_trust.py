"""Issue 39, finding 3, standalone: each way a team member could take a teammate's notebook identity, sent to
the real server over HTTPS as the API server sends it (trust_attacks.py), and what still works for Kubeflow's
own components. The live-mode replay is tests/kube/test_notebook_trust_live.py."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
import yaml

from tests.platform.notebook.trust_attacks import (BOB, BOBS_SECRET, CAROL, CONTROLLER_POD, GARBAGE_COLLECTOR, NOTEBOOK,
                                          NOTEBOOK_CONTROLLER, STATEFULSET, WEB_APP, edited, forged_pod, notebook,
                                          plain_pod, team_objects, tenant_statefulset)
from tests.support import (REPO, STATEFULSET_CONTROLLER, RunningServer, apply_patch, assert_valid_k8s, decode_patch,
                           review, running_server)

NOTEBOOK_POLICY = REPO / "policies" / "notebook-injection.yaml"
CREATOR = "notebooks.kubeflow.org/creator"


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[RunningServer]:
    policies, state = tmp_path / "policies", tmp_path / "state"
    policies.mkdir()
    state.mkdir()
    shutil.copy(NOTEBOOK_POLICY, policies)
    (state / "team.yaml").write_text(yaml.safe_dump_all(team_objects()))
    async with running_server(policies, tmp_path, state=state) as running:
        yield running


def refused(response: dict[str, Any], *words: str) -> str:
    assert response["allowed"] is False and response["status"]["code"] == 403, response
    message = str(response["status"]["message"])
    for word in words:
        assert word in message, message
    return message


def secrets_of(pod: dict[str, Any]) -> list[str]:
    return [v["secret"]["secretName"] for v in pod["spec"].get("volumes") or [] if "secret" in v]


async def test_the_statefulset_controllers_pod_still_gets_its_creators_identity(server):
    response = await server.admit("/mutate", review(CONTROLLER_POD, username=STATEFULSET_CONTROLLER))
    assert response["allowed"] is True
    injected = apply_patch(CONTROLLER_POD, decode_patch(response))
    assert_valid_k8s(injected)
    assert secrets_of(injected) == [BOBS_SECRET]
    admitted = await server.admit("/validate", review(injected, username=STATEFULSET_CONTROLLER))
    assert admitted["allowed"] is True, admitted


async def test_a_bare_pod_owned_by_a_teammates_statefulset_gets_no_identity(server):
    forged = forged_pod()
    refused(await server.admit("/mutate", review(forged, username=CAROL)),
            "created by carol@example.org, not by the StatefulSet controller", "no one else's home or credentials")
    # carol writes the injection herself: the validate phase refuses it just the same
    injected = apply_patch(CONTROLLER_POD, decode_patch(
        await server.admit("/mutate", review(CONTROLLER_POD, username=STATEFULSET_CONTROLLER))))
    injected["metadata"]["name"] = forged["metadata"]["name"]
    refused(await server.admit("/validate", review(injected, username=CAROL)),
            f"reads Secret {BOBS_SECRET!r}", "this pod has no identity", "carol@example.org")


@pytest.mark.parametrize("how", ["volume", "projected", "secretKeyRef", "envFrom"])
async def test_a_plain_pod_reading_the_credentials_secret_is_refused(server, how):
    pod = plain_pod(how)
    for username in (CAROL, STATEFULSET_CONTROLLER):  # her own StatefulSet's pods too: not a notebook pod
        refused(await server.admit("/validate", review(pod, username=username)),
                f"reads Secret {BOBS_SECRET!r}", "this pod is not a notebook pod")
    # with the notebook label and an ownerReference: no identity (bare), or not its own Secret (carol's identity)
    labelled = edited(pod, lambda p: p["metadata"].update(labels={"notebook-name": "training"},
                                                          ownerReferences=CONTROLLER_POD["metadata"]["ownerReferences"]))
    refused(await server.admit("/validate", review(labelled, username=CAROL)), "this pod has no identity")


async def test_a_notebook_pod_reading_another_users_secret_is_refused(server):
    pod = edited(CONTROLLER_POD, lambda p: p["spec"]["containers"][0].update(
        env=[{"name": "LOOT", "valueFrom": {"secretKeyRef": {"name": "oidc-alice", "key": "refresh_token"}}}]))
    injected = apply_patch(pod, decode_patch(await server.admit("/mutate", review(pod, username=STATEFULSET_CONTROLLER))))
    refused(await server.admit("/validate", review(injected, username=STATEFULSET_CONTROLLER)),
            "reads Secret 'oidc-alice'", "this notebook's own credentials are 'oidc-bob'")


async def test_a_pod_without_credentials_is_not_reported(server):
    pod = edited(plain_pod("volume"), lambda p: p["spec"]["volumes"][0]["secret"].update(secretName="db-password"))
    response = await server.admit("/validate", review(pod, username=CAROL))
    assert response["allowed"] is True and "warnings" not in response


@pytest.mark.parametrize("requester, creator, allowed", [
    (CAROL, BOB, False),  # forged: the pods of her notebook would get bob's identity
    (CAROL, "carol", False),  # not her user name either
    (CAROL, CAROL, True),
    (CAROL, None, True),  # no creator: a team notebook without one gets no identity
    (WEB_APP, BOB, True),  # Kubeflow's web app writes the user it authenticated
])
async def test_a_notebooks_creator_is_its_requester_unless_the_web_app_wrote_it(server, requester, creator, allowed):
    response = await server.admit("/validate", review(notebook(creator), username=requester))
    if allowed:
        assert response["allowed"] is True, response
    else:
        refused(response, f"annotation must name the requester {requester!r}", "notebook-creator")


@pytest.mark.parametrize("requester", [CAROL, BOB, WEB_APP, NOTEBOOK_CONTROLLER])
async def test_the_recorded_creator_never_changes(server, requester):
    changed = edited(NOTEBOOK, lambda nb: nb["metadata"]["annotations"].update({CREATOR: CAROL}))
    refused(await server.admit("/validate", review(changed, operation="UPDATE", old=NOTEBOOK, username=requester)),
            "never changes", "bob@example.org")
    removed = edited(NOTEBOOK, lambda nb: nb["metadata"]["annotations"].pop(CREATOR))
    refused(await server.admit("/validate", review(removed, operation="UPDATE", old=NOTEBOOK, username=requester)),
            "never changes")
    stopped = edited(NOTEBOOK, lambda nb: nb["metadata"]["annotations"].update({"kubeflow-resource-stopped": "now"}))
    response = await server.admit("/validate", review(stopped, operation="UPDATE", old=NOTEBOOK, username=requester))
    assert response["allowed"] is True, response


async def test_only_the_creator_changes_a_notebooks_spec(server):
    """The notebook controller builds the StatefulSet from the Notebook's spec: a teammate's edit would run her
    template with the creator's identity."""
    image = "registry.example.org/carol/exfiltrate:1.0"
    changed = edited(NOTEBOOK, lambda nb: nb["spec"]["template"]["spec"]["containers"][0].update(image=image))
    refused(await server.admit("/validate", review(changed, operation="UPDATE", old=NOTEBOOK, username=CAROL)),
            "only the Notebook's creator 'bob@example.org' may change its spec")
    for username in (BOB, NOTEBOOK_CONTROLLER):
        response = await server.admit("/validate", review(changed, operation="UPDATE", old=NOTEBOOK, username=username))
        assert response["allowed"] is True, response


async def test_a_tenant_statefulset_controlled_by_a_teammates_notebook_is_refused(server):
    sts = tenant_statefulset()
    refused(await server.admit("/validate", review(sts, username=CAROL)),
            "only the notebook controller", "Notebook 'training'", "carol@example.org")
    # the pod the StatefulSet controller would make of it: the StatefulSet was never admitted, so no identity
    pod = edited(CONTROLLER_POD, lambda p: p["metadata"].update(name="borrowed-0", ownerReferences=[
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "borrowed", "uid": "0d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6",
         "controller": True, "blockOwnerDeletion": True}]))
    refused(await server.admit("/mutate", review(pod, username=STATEFULSET_CONTROLLER)),
            "StatefulSet ml-team/borrowed is not in the cluster state")


@pytest.mark.parametrize("change", [
    lambda s: s["spec"]["template"]["spec"]["containers"][0].update(image="registry.example.org/carol/exfiltrate:1.0"),
    lambda s: s["metadata"]["ownerReferences"][0].update(name="analysis", uid="another"),  # moved to another Notebook
], ids=["template", "owner"])
async def test_a_notebooks_statefulset_is_changed_by_the_notebook_controller_only(server, change):
    changed = edited(STATEFULSET, change)
    refused(await server.admit("/validate", review(changed, operation="UPDATE", old=STATEFULSET, username=CAROL)),
            "only the notebook controller (spec.identity.notebookControllers) may change")
    response = await server.admit("/validate", review(changed, operation="UPDATE", old=STATEFULSET,
                                                      username=NOTEBOOK_CONTROLLER))
    assert response["allowed"] is True, response


async def test_what_changes_no_pod_passes(server):
    created = await server.admit("/validate", review(STATEFULSET, username=NOTEBOOK_CONTROLLER))
    assert created["allowed"] is True
    labelled = edited(STATEFULSET, lambda s: s["metadata"]["labels"].update(team="vision"))
    orphaned = edited(STATEFULSET, lambda s: s["metadata"].pop("ownerReferences"))  # leaves its Notebook: no identity
    for new, username in ((labelled, CAROL), (labelled, GARBAGE_COLLECTOR), (orphaned, GARBAGE_COLLECTOR)):
        response = await server.admit("/validate", review(new, operation="UPDATE", old=STATEFULSET, username=username))
        assert response["allowed"] is True, response


async def test_a_statefulset_that_predates_the_checks_still_gives_no_identity(tmp_path):
    """carol's StatefulSet made before Quartermaster refused such writes: the notebook controller names a
    Notebook's StatefulSet after it, so another one claiming the Notebook is not believed."""
    policies, state = tmp_path / "policies", tmp_path / "state"
    policies.mkdir()
    state.mkdir()
    shutil.copy(NOTEBOOK_POLICY, policies)
    borrowed = edited(tenant_statefulset(), lambda s: s["metadata"].update(uid="0d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"))
    (state / "team.yaml").write_text(yaml.safe_dump_all([*team_objects(), borrowed]))
    pod = edited(CONTROLLER_POD, lambda p: p["metadata"].update(name="borrowed-0", ownerReferences=[
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "borrowed", "uid": borrowed["metadata"]["uid"],
         "controller": True, "blockOwnerDeletion": True}]))
    async with running_server(policies, tmp_path, state=state) as server:
        refused(await server.admit("/mutate", review(pod, username=STATEFULSET_CONTROLLER)),
                "StatefulSet ml-team/borrowed is not the notebook controller's for Notebook training")


def debug_review(pod: dict[str, Any], username: str) -> dict[str, Any]:
    """`kubectl debug` of a running pod: an UPDATE of its pods/ephemeralcontainers subresource."""
    debugged = edited(pod, lambda p: p["spec"].update(ephemeralContainers=[
        {"name": "debugger", "image": "busybox:1.36", "command": ["sh"], "stdin": True, "tty": True,
         "volumeMounts": [{"name": "oidc-credentials", "mountPath": "/loot"}]}]))
    body = review(debugged, operation="UPDATE", old=pod, username=username)
    body["request"]["subResource"] = body["request"]["requestSubResource"] = "ephemeralcontainers"
    return body


async def test_only_the_notebooks_own_user_adds_ephemeral_containers(server):
    injected = apply_patch(CONTROLLER_POD, decode_patch(
        await server.admit("/mutate", review(CONTROLLER_POD, username=STATEFULSET_CONTROLLER))))
    refused(await server.admit("/validate", debug_review(injected, CAROL)),
            "ephemeral container 'debugger'", "only bob@example.org may add one", "carol@example.org")
    assert (await server.admit("/validate", debug_review(injected, BOB)))["allowed"] is True
    # a pod without anyone's credentials: debugged by whoever RBAC lets
    plain = plain_pod("secretKeyRef")
    plain["spec"]["containers"][0].pop("env")
    assert (await server.admit("/validate", debug_review(plain, CAROL)))["allowed"] is True
