"""Issue 39, finding 3, in live mode: the attacks of tests/platform/notebook/trust_attacks.py sent over HTTPS to the real
server, which reads bob's Notebook and StatefulSet (and one carol made before the checks) through its informers
from the test API server (real REST and watch)."""

import shutil
from dataclasses import replace

from tests.kube.conftest import FAST, async_eventually
from tests.platform.notebook.test_trust import NOTEBOOK_POLICY, debug_review, refused, secrets_of
from tests.platform.notebook.trust_attacks import (BOB, BOBS_SECRET, CAROL, CONTROLLER_POD, edited, forged_pod, notebook,
                                          plain_pod, team_objects, tenant_statefulset)
from tests.support import STATEFULSET_CONTROLLER, apply_patch, decode_patch, review, running_server

BORROWED_UID = "0d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"


async def test_a_teammates_identity_cannot_be_taken_in_live_mode(apiserver, kubeconfig, tmp_path):
    policies = tmp_path / "policies"
    policies.mkdir()
    shutil.copy(NOTEBOOK_POLICY, policies)
    for obj in team_objects():
        apiserver.put(obj)
    # carol's StatefulSet claiming bob's Notebook, made before Quartermaster refused such writes
    apiserver.put(edited(tenant_statefulset(), lambda s: s["metadata"].update(uid=BORROWED_UID)))
    settings = replace(FAST, kubeconfig=kubeconfig, backstop=False)
    async with running_server(policies, tmp_path, live=settings) as server:
        await async_eventually(lambda: server.qm.state.synced, timeout=20)
        await async_eventually(lambda: server.qm.state.get("StatefulSet", "ml-team", "borrowed") is not None)
        # the StatefulSet controller's pod of bob's notebook: bob's identity, found through the informers
        response = await server.admit("/mutate", review(CONTROLLER_POD, username=STATEFULSET_CONTROLLER))
        assert response["allowed"] is True, response
        injected = apply_patch(CONTROLLER_POD, decode_patch(response))
        assert secrets_of(injected) == [BOBS_SECRET]
        assert (await server.admit("/validate", review(injected, username=STATEFULSET_CONTROLLER)))["allowed"] is True
        # kubectl debug of bob's running notebook pod: carol may not, bob may
        refused(await server.admit("/validate", debug_review(injected, CAROL)), "only bob@example.org may add one")
        assert (await server.admit("/validate", debug_review(injected, BOB)))["allowed"] is True
        # a bare pod with the notebook label and bob's StatefulSet as its controller
        refused(await server.admit("/mutate", review(forged_pod(), username=CAROL)),
                "not by the StatefulSet controller")
        # a plain pod mounting bob's credentials Secret
        refused(await server.admit("/validate", review(plain_pod("volume"), username=CAROL)),
                f"reads Secret {BOBS_SECRET!r}", "not a notebook pod")
        # a Notebook whose creator annotation names bob, created by carol
        refused(await server.admit("/validate", review(notebook(BOB), username=CAROL)), "must name the requester")
        # a new StatefulSet controlled by bob's Notebook
        refused(await server.admit("/validate", review(tenant_statefulset(), username=CAROL)),
                "only the notebook controller")
        # the pods of the StatefulSet carol made before the checks
        pod = edited(CONTROLLER_POD, lambda p: p["metadata"].update(name="borrowed-0", ownerReferences=[
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "borrowed", "uid": BORROWED_UID,
             "controller": True, "blockOwnerDeletion": True}]))
        refused(await server.admit("/mutate", review(pod, username=STATEFULSET_CONTROLLER)),
                "is not the notebook controller's for Notebook training")
