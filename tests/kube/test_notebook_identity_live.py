"""Live mode: a team notebook's creator is found through the informers' StatefulSets and Notebooks,
read by the real `kubernetes` client from the test API server (list + watch)."""

import copy

from tests.kube.conftest import eventually
from tests.kube.objects import namespace
from tests.support import REPO, load_yaml
from webhook.platform.base import profile_info
from webhook.platform.notebook.identity import UnknownIdentity, compile_identity, resolve

CASE = REPO / "tests" / "cases" / "notebook" / "team-creator"


def test_the_creator_is_resolved_from_the_informers(apiserver, live_state):
    team = namespace("ml-team", klass="team", owner="alice@example.org")
    apiserver.put(team)
    for obj in load_yaml(CASE / "state.yaml"):  # the Notebook and its StatefulSet
        apiserver.put(copy.deepcopy(obj))
    state = live_state()
    state.start()
    eventually(lambda: state.synced, message=str(state.sync_details()))
    pod = load_yaml(CASE / "resource.yaml")[0]
    spec = compile_identity({})
    stored_ns = state.get("Namespace", "", "ml-team")
    identity = resolve(spec, profile_info(stored_ns), stored_ns, pod, state.lookups)
    assert identity.user == "bob"
    # the Notebook goes away: the watch removes it, and the identity is unknown again (never alice's)
    assert apiserver.remove({"apiVersion": "kubeflow.org/v1", "kind": "Notebook",
                             "metadata": {"name": "training", "namespace": "ml-team"}})
    eventually(lambda: state.get("Notebook", "ml-team", "training") is None)
    try:
        resolve(spec, profile_info(stored_ns), stored_ns, pod, state.lookups)
    except UnknownIdentity as exc:
        assert "Notebook ml-team/training is not in the cluster state" in str(exc)
    else:
        raise AssertionError("resolved without a Notebook")
